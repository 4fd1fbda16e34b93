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
    std::string_view name() const override { return "onednn"; }

private:
    using Key = std::tuple<int64_t, int64_t, int64_t, bool, bool, int64_t, int64_t, int64_t,
                           bool, bool>;
    struct Entry {
        dnnl::matmul primitive;
        dnnl::memory::desc a, b, c, bias;
    };
    Entry& entry_for(const GemmShape& s, bool has_bias);

    dnnl::engine engine_;
    dnnl::stream stream_;
    std::map<Key, Entry> cache_;
};

}  // namespace lmforge::backend
