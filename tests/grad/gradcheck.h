// Finite-difference gradient checks in double. For a kernel f and a fixed random dout, the
// scalar L(x) = Σ dout ⊙ f(x) has dL/dx = backward(dout); central differences of L, element
// by element, must match what the kernel's backward computes.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "kernels/bf16.h"
#include "test_util.h"

namespace lmforge::test {

// Numeric dL/dx for every element of x, where loss() evaluates L from the current x.
inline std::vector<double> numeric_grad(std::vector<double>& x, const std::function<double()>& loss,
                                        double eps = 1e-6) {
    std::vector<double> g(x.size());
    for (size_t i = 0; i < x.size(); i++) {
        const double saved = x[i];
        x[i] = saved + eps;
        const double plus = loss();
        x[i] = saved - eps;
        const double minus = loss();
        x[i] = saved;
        g[i] = (plus - minus) / (2 * eps);
    }
    return g;
}

inline double dot(const std::vector<double>& a, const std::vector<double>& b) {
    double s = 0;
    for (size_t i = 0; i < a.size(); i++) s += a[i] * b[i];
    return s;
}

// Central differences at eps 1e-6 in double are good to ~1e-8 relative on smooth functions.
inline constexpr double kGradRtol = 1e-6;
inline constexpr double kGradAtol = 1e-8;

// One input of a kernel under test: its values and the gradient the analytic backward gave.
struct GradInput {
    std::string name;
    std::vector<double>* values;
    const std::vector<double>* analytic;
};

// Expects every input's analytic gradient to match central differences of loss().
inline void expect_matches_finite_differences(const std::vector<GradInput>& inputs,
                                              const std::function<double()>& loss) {
    for (const GradInput& in : inputs) {
        const std::vector<double> numeric = numeric_grad(*in.values, loss);
        EXPECT_TRUE(close(*in.analytic, numeric, kGradRtol, kGradAtol)) << "d/d" << in.name;
    }
}

// Float kernels against their double twins: float rounding over sums of a few hundred terms.
inline constexpr double kTwinRtol = 2e-5;
inline constexpr double kTwinAtol = 2e-5;

// x rounded to bf16: the bf16 values for a mixed-precision kernel, and the same values widened
// to double (exactly) for its twin.
inline std::pair<std::vector<bf16>, std::vector<double>> round_to_bf16(const std::vector<float>& x) {
    std::vector<bf16> h(x.size());
    kernels::to_bf16(h.data(), x.data(), static_cast<int64_t>(x.size()));
    std::vector<double> r(x.size());
    for (size_t i = 0; i < x.size(); i++) r[i] = from_bf16(h[i]);
    return {h, r};
}

}  // namespace lmforge::test
