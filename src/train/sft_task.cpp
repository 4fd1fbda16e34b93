#include "train/sft_task.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "core/error.h"
#include "core/file_io.h"
#include "core/log.h"
#include "core/rng.h"
#include "data/instructions.h"
#include "kernels/crossentropy.h"
#include "model/causal_lm.h"
#include "model/gpt2.h"
#include "train/example_order.h"
#include "train/model_setup.h"
#include "train/sampler.h"

namespace lmforge {

namespace {

// Response-token losses and exact matches over a split, summed over processes.
struct SftEval {
    LossSum tokens;
    double exact = 0, examples = 0;
    double exact_match() const { return examples > 0 ? exact / examples : 0.0; }
};

class SftTask final : public Task {
public:
    SftTask(const TrainConfig& cfg, const Tokenizer* tokenizer)
        : cfg_(cfg), tokenizer_(tokenizer), data_(load(cfg)), batches_(data_.train.size(), seed()) {}

    const char* name() const override { return "sft"; }
    std::unique_ptr<Model> make_model(backend::Gemm& gemm, Precision precision) override {
        return lmforge::make_model(cfg_, T(), 0, gemm, precision, parse_recompute(cfg_.train.recompute));
    }
    int64_t max_seq_len() const override { return T(); }
    int64_t epoch_size() const override { return data_.train.size(); }

    void start(const BatchPlan& plan) override {
        plan_ = plan;
        batches_.start(plan);
    }
    void next_batch(Batch& batch) override { fill(batch, data_.train, batches_.next()); }
    nlohmann::json data_state() const override { return batches_.state(); }
    void restore(const nlohmann::json& state) override { batches_.restore(state, cfg_.data.dir); }
    std::vector<std::string> data_files() const override { return split_files(cfg_.data.dir, "instructions.json"); }

    Evaluation evaluate(Model& model, Communicator& comm) override {
        const SftEval e = evaluate_split(dynamic_cast<CausalLm&>(model), comm, data_.val);
        const double loss = e.tokens.mean();
        return {.loss = loss,
                .metrics = {{"val_loss", loss}, {"val_perplexity", std::exp(loss)}, {"val_exact_match", e.exact_match()}},
                .rank_metric = loss};
    }
    std::string describe(const Evaluation& e) const override {
        return fmt::format("val loss {:.4f} (perplexity {:.2f}), exact match {:.4f}", e.loss, std::exp(e.loss),
                           e.metrics[2].second);
    }
    std::string describe_data() const override {
        return fmt::format("sft: {} train / {} val / {} test examples ({}) of at most {} tokens, {} responses cut to "
                           "fit; the loss on response tokens only; batches padded to their longest example",
                           data_.train.size(), data_.val.size(), data_.test.size(), data_.format, T(),
                           data_.truncated);
    }
    bool report_on_best() const override { return true; }
    std::string report(Model& model, const ReportContext& ctx) override;

private:
    static InstructionData load(const TrainConfig& cfg);
    uint64_t seed() const { return static_cast<uint64_t>(cfg_.train.seed); }
    int64_t T() const { return data_.train.max_len; }
    // Inputs and response-only targets for examples idx, padded to the batch's longest input,
    // rounded up to 16.
    void fill(Batch& batch, const InstructionSplit& s, const std::vector<int64_t>& idx) const;
    SftEval evaluate_split(CausalLm& model, Communicator& comm, const InstructionSplit& s) const;
    // Greedy completions of the first test prompts, with their references (the lead's).
    std::vector<std::pair<std::string, std::string>> completions(CausalLm& model, backend::Gemm& gemm) const;

    const TrainConfig& cfg_;
    const Tokenizer* tokenizer_;
    InstructionData data_;
    EpochBatches batches_;
    BatchPlan plan_;
};

InstructionData SftTask::load(const TrainConfig& cfg) {
    if (is_encoder(cfg)) {
        throw InputError(fmt::format("train.task = \"sft\" needs a GPT-2 model, not model.preset = \"{}\"",
                                     cfg.model.preset),
                         "generative fine-tuning continues text; choose a gpt2 preset");
    }
    if (!std::filesystem::exists(cfg.data.dir + "/instructions.json")) {
        throw InputError(fmt::format("{}: no instructions.json: not instruction data", cfg.data.dir),
                         "prepare it with lmforge prepare --instructions");
    }
    InstructionData data = load_instructions_dir(cfg.data.dir);
    check_splits(cfg.data.dir, data.train.size(), data.val.size(), data.test.size());
    return data;
}

void SftTask::fill(Batch& batch, const InstructionSplit& s, const std::vector<int64_t>& idx) const {
    int64_t longest = 1;
    for (const int64_t i : idx) longest = std::max<int64_t>(longest, s.lengths[i] - 1);
    const int64_t B = static_cast<int64_t>(idx.size()), T = std::min(s.max_len, (longest + 15) / 16 * 16);
    batch.resize_for_tokens(B, T);
    std::fill(batch.inputs.begin(), batch.inputs.end(), data_.pad_id);
    std::fill(batch.targets.begin(), batch.targets.end(), kernels::kIgnoreIndex);
    for (int64_t b = 0; b < B; b++) {
        const int32_t* tokens = s.tokens.data() + idx[b] * s.max_len;
        const int64_t n = s.lengths[idx[b]] - 1;  // inputs: all but the last token
        std::copy_n(tokens, n, batch.inputs.begin() + b * T);
        // Position t predicts token t + 1: a target where that token is the response's.
        for (int64_t t = s.prompt_lengths[idx[b]] - 1; t < n; t++) batch.targets[b * T + t] = tokens[t + 1];
    }
}

SftEval SftTask::evaluate_split(CausalLm& model, Communicator& comm, const InstructionSplit& s) const {
    SftEval e;
    Batch batch;
    for_each_batch_of_share(s.size(), comm.rank(), comm.size(), plan_.B, [&](const std::vector<int64_t>& idx) {
        fill(batch, s, idx);
        e.tokens += model.forward(batch);
        for (int64_t b = 0; b < batch.B; b++) {
            bool all_top = true;
            for (int64_t t = 0; t < batch.T; t++) {
                const int64_t i = b * batch.T + t;
                if (batch.targets[i] != kernels::kIgnoreIndex) all_top = all_top && model.target_is_top(i);
            }
            e.exact += all_top ? 1 : 0;
            e.examples += 1;
        }
    });
    double sums[5] = {e.tokens.sum, static_cast<double>(e.tokens.count), static_cast<double>(e.tokens.correct),
                      e.exact, e.examples};
    comm.allreduce_sum(sums, 5);
    return {{sums[0], static_cast<int64_t>(sums[1]), static_cast<int64_t>(sums[2])}, sums[3], sums[4]};
}

std::string SftTask::report(Model& model, const ReportContext& ctx) {
    auto& lm = dynamic_cast<CausalLm&>(model);
    const SftEval test = evaluate_split(lm, ctx.comm, data_.test);
    const std::vector<std::pair<std::string, std::string>> shown =
        ctx.comm.rank() == 0 ? completions(lm, ctx.gemm) : std::vector<std::pair<std::string, std::string>>{};
    std::string text;
    nlohmann::ordered_json j = {{"test_loss", test.tokens.mean()},      {"test_perplexity", std::exp(test.tokens.mean())},
                                {"test_exact_match", test.exact_match()}, {"test_examples", test.examples},
                                {"best_step", ctx.best_step},             {"completions", nlohmann::json::array()}};
    for (const auto& [reference, completion] : shown) {
        text += fmt::format("--- reference ---\n{}\n--- greedy completion ---\n{}\n", reference, completion);
        j["completions"].push_back({{"reference", reference}, {"greedy", completion}});
    }
    if (ctx.comm.rank() == 0) write_text_atomic(ctx.run_dir + "/test_report.json", j.dump(2) + "\n");
    return text + fmt::format("test (best/ from {}): loss {:.4f} (perplexity {:.2f}) on response tokens; exact "
                              "match {:.4f} of {} responses\n",
                              ctx.best, test.tokens.mean(), std::exp(test.tokens.mean()), test.exact_match(),
                              static_cast<int64_t>(test.examples));
}

std::vector<std::pair<std::string, std::string>> SftTask::completions(CausalLm& model, backend::Gemm& gemm) const {
    if (tokenizer_ == nullptr) {
        log::warn("no tokenizer beside the data: no completions shown");
        return {};
    }
    const std::unique_ptr<Decoder> decoder_ptr = model.decoder(gemm);
    Decoder& decoder = *decoder_ptr;
    Rng rng(static_cast<uint64_t>(cfg_.sample.seed));
    const auto strip = [&](std::vector<int32_t> ids) {
        if (!ids.empty() && ids.back() == data_.pad_id) ids.pop_back();
        return tokenizer_->decode(ids);
    };
    std::vector<std::pair<std::string, std::string>> shown;
    for (int64_t k = 0; k < std::min<int64_t>(3, data_.test.size()); k++) {
        const int32_t* tokens = data_.test.tokens.data() + k * T();
        const int64_t p = data_.test.prompt_lengths[k], n = data_.test.lengths[k];
        decoder.reset();
        const std::vector<int32_t> out =
            generate(decoder, std::span<const int32_t>(tokens, p),
                     {.max_new_tokens = T() - p, .temperature = 0.0, .stop_token = data_.pad_id}, rng);
        shown.emplace_back(strip(std::vector<int32_t>(tokens + p, tokens + n)), strip(out));
    }
    return shown;
}

}  // namespace

std::unique_ptr<Task> make_sft_task(const TrainConfig& cfg, const Tokenizer* tokenizer) {
    return std::make_unique<SftTask>(cfg, tokenizer);
}

}  // namespace lmforge
