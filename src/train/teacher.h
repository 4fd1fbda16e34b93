// The teacher of train.task = "distill": a checkpoint's model, loaded once per process and run
// forward only (in bf16 where the CPU has AVX512_BF16), that turns a batch into soft targets —
// its temperature-softened log-probabilities at the batch's counted targets, in the order the
// student's head meets them (kernels/soft_targets.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backend/gemm.h"
#include "model/batch.h"
#include "model/model.h"

namespace lmforge {

class Teacher {
public:
    // DIR/model.safetensors, which must be GPT-2 for a GPT-2 student and BERT or DistilBERT for
    // an encoder, without a classification head, of the student's vocabulary and able to read
    // seq_len tokens: InputError naming distill.teacher otherwise.
    Teacher(const std::string& dir, const Model& student, int64_t seq_len, backend::Gemm& gemm);

    // One line for the log: "gpt2, 4 layers, 4 heads, width 128 (bf16) from DIR".
    const std::string& description() const { return description_; }
    // The checkpoint's weights file: a run's fingerprint covers it, so a resume with another
    // teacher is refused.
    const std::string& weights_path() const { return weights_; }

    // logp (M, V): log softmax(teacher logits / temperature) at each of the batch's targets
    // that is not ignored, row-major; M is returned.
    int64_t log_probs(const Batch& batch, float temperature, std::vector<float>& logp);

private:
    std::string weights_, description_;
    std::unique_ptr<Model> model_;
    bool encoder_ = false;
    std::vector<int32_t> rows_;
};

}  // namespace lmforge
