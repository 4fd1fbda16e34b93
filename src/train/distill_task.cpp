#include "train/distill_task.h"

#include <fmt/format.h>

#include "train/lm_task.h"
#include "train/mlm_task.h"
#include "train/model_setup.h"
#include "train/teacher.h"

namespace lmforge {

namespace {

// One micro-batch's soft targets: the trainer draws every micro-batch of a step before the
// first forward, so each keeps its own.
struct SoftBatch {
    std::vector<float> logp, kl;
    kernels::SoftTargets targets;
};

class DistillTask final : public Task {
public:
    DistillTask(const TrainConfig& cfg, const Tokenizer* tokenizer)
        : cfg_(cfg), student_task_(is_encoder(cfg) ? make_mlm_task(cfg) : make_lm_task(cfg, tokenizer)) {}

    const char* name() const override { return "distill"; }
    std::unique_ptr<Model> make_model(backend::Gemm& gemm, Precision precision) override {
        std::unique_ptr<Model> student = student_task_->make_model(gemm, precision);
        teacher_ = std::make_unique<Teacher>(cfg_.distill.teacher, *student, student_task_->max_seq_len(), gemm);
        return student;
    }
    int64_t max_seq_len() const override { return student_task_->max_seq_len(); }
    int64_t requested_global_batch(int world) const override { return student_task_->requested_global_batch(world); }

    void start(const BatchPlan& plan) override {
        student_task_->start(plan);
        soft_.assign(static_cast<size_t>(plan.accumulation), SoftBatch{});
        next_ = 0;
    }
    void next_batch(Batch& batch) override {
        student_task_->next_batch(batch);
        SoftBatch& s = soft_[next_];
        next_ = (next_ + 1) % soft_.size();
        const auto T = static_cast<float>(cfg_.distill.temperature);
        const int64_t rows = teacher_->log_probs(batch, T, s.logp);
        s.kl.assign(static_cast<size_t>(rows), 0.0f);
        s.targets = {.rows = rows, .logp = s.logp.data(), .temperature = T,
                     .task_weight = static_cast<float>(cfg_.distill.task_weight),
                     .kl_weight = static_cast<float>(cfg_.distill.kl_weight), .kl = s.kl.data()};
        batch.soft_targets = &s.targets;
    }
    nlohmann::json data_state() const override { return student_task_->data_state(); }
    void restore(const nlohmann::json& state) override { student_task_->restore(state); }
    std::vector<std::string> data_files() const override {
        std::vector<std::string> files = student_task_->data_files();
        files.push_back(teacher_->weights_path());
        return files;
    }

    bool has_validation() const override { return student_task_->has_validation(); }
    Evaluation evaluate(Model& model, Communicator& comm) override { return student_task_->evaluate(model, comm); }
    std::string describe(const Evaluation& e) const override { return student_task_->describe(e); }
    std::string describe_data() const override {
        return fmt::format("{}; distilled from {}, T = {:g}, weights: task {:g}, KL {:g}",
                           student_task_->describe_data(), teacher_->description(), cfg_.distill.temperature,
                           cfg_.distill.task_weight, cfg_.distill.kl_weight);
    }
    double flops_per_token(const Model& model) const override { return student_task_->flops_per_token(model); }
    std::vector<std::string> samples(Model& model, backend::Gemm& gemm, int64_t count) override {
        return student_task_->samples(model, gemm, count);
    }
    std::string report(Model& model, const ReportContext& ctx) override { return student_task_->report(model, ctx); }

private:
    const TrainConfig& cfg_;
    std::unique_ptr<Task> student_task_;
    std::unique_ptr<Teacher> teacher_;
    std::vector<SoftBatch> soft_;
    size_t next_ = 0;
};

}  // namespace

std::unique_ptr<Task> make_distill_task(const TrainConfig& cfg, const Tokenizer* tokenizer) {
    return std::make_unique<DistillTask>(cfg, tokenizer);
}

}  // namespace lmforge
