// GEMM on oneDNN's matmul primitive. Primitives are built once per shape and cached: building
// one JIT-compiles a kernel, which costs far more than a small product.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include <map>
#include <tuple>

#include "backend/gemm.h"

namespace lmforge::backend {

class OnednnGemm final : public Gemm {
public:
    OnednnGemm();
    void run(const GemmShape& s, const float* a, const float* b, float* c,
             const float* bias) override;
    void run_bf16(const GemmShape& s, const uint16_t* a, const uint16_t* b, float* c,
                  const float* bias) override;
    std::string_view name() const override { return "onednn"; }

private:
    using Key = std::tuple<int64_t, int64_t, int64_t, bool, bool, int64_t, int64_t, int64_t,
                           bool, bool, int>;
    struct Entry {
        dnnl::matmul primitive;
        dnnl::memory::desc a, b, c, bias;
    };
    // in: the type of a and b (f32 or bf16); c and bias are f32 either way.
    Entry& entry_for(const GemmShape& s, bool has_bias, dnnl::memory::data_type in);
    void execute(const GemmShape& s, const void* a, const void* b, float* c, const float* bias,
                 dnnl::memory::data_type in);

    dnnl::engine engine_;
    dnnl::stream stream_;
    std::map<Key, Entry> cache_;
};

}  // namespace lmforge::backend
