// Helpers shared by the tests: seeded random tensors, type conversion and tolerance checks
// that print where and by how much two tensors differ.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/rng.h"
#include "core/bf16.h"
#include "model/llama_config.h"
#include "model/model.h"

namespace lmforge::test {

// A two-layer Llama with grouped-query attention (4 heads, 2 key/value heads, width 64,
// vocabulary 61): big enough for every kernel path, small enough for a unit test.
inline LlamaConfig tiny_llama_config(bool tied, int64_t block_size) {
    LlamaConfig m;
    m.n_layer = 2;
    m.n_head = 4;
    m.n_kv_head = 2;
    m.n_embd = 64;
    m.intermediate = 176;
    m.vocab_size = 61;
    m.block_size = block_size;
    m.tie_embeddings = tied;
    return m;
}

// Each of B rows of T ids padded with id 0 at its end: the length before the padding (at least 1).
inline std::vector<int32_t> lengths_before_padding(const std::vector<int32_t>& ids, int64_t B, int64_t T) {
    std::vector<int32_t> lengths(static_cast<size_t>(B));
    for (int64_t b = 0; b < B; b++) {
        int32_t n = static_cast<int32_t>(T);
        while (n > 1 && ids[b * T + n - 1] == 0) n--;
        lengths[b] = n;
    }
    return lengths;
}

template <class T_ = float>
std::vector<T_> random_vector(int64_t n, uint64_t seed, float scale = 1.0f) {
    std::vector<float> f(static_cast<size_t>(n));
    Rng rng(seed);
    rng.fill_normal(f.data(), n, 0.0f, scale);
    return std::vector<T_>(f.begin(), f.end());
}

template <class To, class From>
std::vector<To> convert(const std::vector<From>& x) {
    return std::vector<To>(x.begin(), x.end());
}

// Checks |got - want| <= atol + rtol·|want| elementwise; reports the worst element.
template <class A, class B>
::testing::AssertionResult close(std::span<const A> got, std::span<const B> want, double rtol,
                                 double atol) {
    if (got.size() != want.size()) {
        return ::testing::AssertionFailure()
               << "sizes differ: " << got.size() << " vs " << want.size();
    }
    double worst = 0.0;
    size_t at = 0;
    size_t failures = 0;
    for (size_t i = 0; i < got.size(); i++) {
        const double g = static_cast<double>(got[i]), w = static_cast<double>(want[i]);
        const double excess = std::abs(g - w) - (atol + rtol * std::abs(w));
        if (!(excess <= 0.0)) {  // also catches NaN
            failures++;
            if (failures == 1 || excess > worst) {
                worst = excess;
                at = i;
            }
        }
    }
    if (failures == 0) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure()
           << failures << " of " << got.size() << " elements differ; worst at [" << at
           << "]: got " << static_cast<double>(got[at]) << ", want "
           << static_cast<double>(want[at]) << " (rtol " << rtol << ", atol " << atol << ")";
}

template <class A, class B>
::testing::AssertionResult close(const std::vector<A>& got, const std::vector<B>& want,
                                 double rtol, double atol) {
    return close(std::span<const A>(got), std::span<const B>(want), rtol, atol);
}

// max |x|, a tensor's scale for tolerances relative to it.
template <class T_>
double max_abs(std::span<const T_> x) {
    double m = 0.0;
    for (const T_& v : x) m = std::max(m, std::abs(static_cast<double>(v)));
    return m;
}

// The model's gradients as floats: its fp32 ones, or its bf16 ones widened.
inline std::vector<float> grads_as_floats(const Model& m) {
    if (!m.grads_in_bf16()) return {m.grads().begin(), m.grads().end()};
    std::vector<float> g;
    for (const uint16_t x : m.grads_bf16()) g.push_back(from_bf16(x));
    return g;
}

// The message of the InputError that f throws, or "no error".
template <class F>
std::string input_error_of(F&& f) {
    try {
        f();
    } catch (const InputError& e) {
        return e.what();
    }
    return "no error";
}

}  // namespace lmforge::test
