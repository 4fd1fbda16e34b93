#include "train/teacher.h"

#include <fmt/format.h>

#include "checkpoint/checkpoint.h"
#include "core/error.h"
#include "kernels/soft_targets.h"
#include "model/bert.h"
#include "model/gpt2.h"
#include "train/model_setup.h"

namespace lmforge {

namespace {

InputError teacher_error(const std::string& what, const std::string& hint = "") {
    return InputError(fmt::format("distill.teacher: {}", what), hint);
}

// The teacher's model for weights at PATH, shaped as recorded there; its context in `context`.
std::unique_ptr<Model> teacher_model(const std::string& path, bool encoder, backend::Gemm& gemm, int64_t& context) {
    const Precision precision = cpu_has_bf16() ? Precision::Bf16 : Precision::Fp32;
    const std::string arch = read_model_arch(path);
    if (encoder != is_bert_family(arch)) {
        throw teacher_error(fmt::format("{} holds a {} model, and the student is {}", path, arch,
                                        encoder ? "an encoder" : "GPT-2"),
                            encoder ? "distil an encoder from a BERT or DistilBERT checkpoint"
                                    : "distil GPT-2 from a GPT-2 checkpoint");
    }
    if (encoder) {
        const BertConfig cfg = read_bert_config(path);
        context = cfg.max_position;
        if (cfg.num_labels > 0) throw teacher_error(fmt::format("{} is a classifier, not a masked LM", path));
        return std::make_unique<Bert>(cfg, gemm, precision);
    }
    const Gpt2Config cfg = read_model_config(path);
    context = cfg.block_size;
    if (cfg.num_labels > 0) throw teacher_error(fmt::format("{} is a classifier, not a language model", path));
    return std::make_unique<Gpt2>(cfg, gemm, precision);
}

}  // namespace

Teacher::Teacher(const std::string& dir, const Model& student, int64_t seq_len, bool hidden, backend::Gemm& gemm)
    : weights_(dir + "/model.safetensors"), encoder_(dynamic_cast<const Bert*>(&student) != nullptr), hidden_(hidden) {
    int64_t context = 0;
    model_ = teacher_model(weights_, encoder_, gemm, context);
    if (model_->vocab_size() != student.vocab_size()) {
        throw teacher_error(fmt::format("its vocabulary has {} tokens, the student's {}", model_->vocab_size(),
                                        student.vocab_size()),
                            "distil from a teacher trained on the student's tokenizer");
    }
    if (context < seq_len) {
        throw teacher_error(fmt::format("its context of {} tokens is shorter than the student's sequences of {}",
                                        context, seq_len),
                            "shorten train.seq_len");
    }
    if (hidden && model_->width() != student.width()) {
        throw teacher_error(fmt::format("its hidden states are {} wide, the student's {}: distill.cosine_weight "
                                        "compares states of equal width",
                                        model_->width(), student.width()),
                            "set distill.cosine_weight = 0, or distil into a student of the teacher's width");
    }
    load_model_weights(*model_, weights_);
    description_ = fmt::format("{} ({}) from {}", model_summary(*model_),
                               cpu_has_bf16() ? "bf16" : "fp32", dir);
}

int64_t Teacher::targets(const Batch& batch, float temperature, std::vector<float>& logp,
                         std::vector<float>& hidden) {
    const int64_t N = batch.B * batch.T, V = model_->vocab_size();
    rows_.clear();
    for (int64_t i = 0; i < N; i++) {
        if (batch.targets[i] != kernels::kIgnoreIndex) rows_.push_back(static_cast<int32_t>(i));
    }
    const auto M = static_cast<int64_t>(rows_.size());
    logp.resize(static_cast<size_t>(M * V));
    // Logits at every position: what a forward without targets computes.
    model_->forward(Batch{.B = batch.B, .T = batch.T, .inputs = batch.inputs, .lengths = batch.lengths});
    const float* logits = nullptr;
    int64_t stride = V;
    if (encoder_) {
        logits = static_cast<const Bert&>(*model_).logits();
    } else {
        const auto& lm = static_cast<const CausalLm&>(*model_);
        logits = lm.logits();
        stride = lm.padded_vocab();
    }
    kernels::teacher_log_probs(logp.data(), logits, rows_.data(), M, V, stride, temperature);
    if (hidden_) {
        hidden.resize(static_cast<size_t>(M * model_->width()));
        model_->final_hidden_rows(rows_.data(), M, hidden.data());
    }
    return M;
}

}  // namespace lmforge
