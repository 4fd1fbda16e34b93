// The GEMMs of train.precision = "fp16": every product's two inputs are rounded to fp16
// (kernels/fp16.h, F16C) and multiplied with fp32 accumulation — by the wrapped GEMM in fp16
// where it multiplies fp16 itself (native_f16: oneDNN's fp16 matmul, on AVX512_FP16 or AMX-FP16
// CPUs), elsewhere by its fp32 GEMM on the rounded values: the same numbers, overflow to
// infinity included, which dynamic loss scaling (optim/loss_scaler.h) watches for. The model
// itself runs its fp32 path; outputs, bias and accumulation stay fp32.
#pragma once

#include <memory>
#include <vector>

#include "backend/gemm.h"

namespace lmforge {

class Fp16InputGemm final : public backend::Gemm {
public:
    explicit Fp16InputGemm(std::unique_ptr<backend::Gemm> inner) : inner_(std::move(inner)) {}

    void run(const backend::GemmShape& s, const float* a, const float* b, float* c,
             const float* bias = nullptr) override;
    // bf16 inputs are already narrower than fp16: passed through.
    void run_bf16(const backend::GemmShape& s, const uint16_t* a, const uint16_t* b, float* c,
                  const float* bias = nullptr) override {
        inner_->run_bf16(s, a, b, c, bias);
    }
    void run_bf16(const backend::GemmShape& s, const uint16_t* a, const uint16_t* b, uint16_t* c,
                  const float* bias = nullptr) override {
        inner_->run_bf16(s, a, b, c, bias);
    }
    std::string_view name() const override {
        return inner_->native_f16() ? "fp16 inputs (F16C) + fp16 GEMM" : "fp16 inputs (F16C) + fp32 GEMM";
    }

private:
    std::unique_ptr<backend::Gemm> inner_;
    std::vector<float> a_, b_;                // the rounded inputs, tight
    std::vector<uint16_t> a_half_, b_half_;  // the same as fp16, for an inner GEMM in fp16
};

}  // namespace lmforge
