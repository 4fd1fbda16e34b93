// The reference GEMM (see gemm_naive.cpp).
#pragma once

#include "backend/gemm.h"

namespace lmforge::backend {

class NaiveGemm final : public Gemm {
public:
    void run(const GemmShape& s, const float* a, const float* b, float* c,
             const float* bias) override;
    void run_bf16(const GemmShape& s, const uint16_t* a, const uint16_t* b, float* c,
                  const float* bias) override;
    void run_bf16(const GemmShape& s, const uint16_t* a, const uint16_t* b, uint16_t* c,
                  const float* bias) override;
    std::string_view name() const override { return "naive"; }
};

}  // namespace lmforge::backend
