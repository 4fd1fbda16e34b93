#include "train/lm_task.h"

#include <fmt/format.h>

#include <cmath>

#include "core/error.h"
#include "core/log.h"
#include "core/rng.h"
#include "data/dataloader.h"
#include "data/shard_check.h"
#include "io/json_fields.h"
#include "model/gpt2.h"
#include "train/benchmark.h"
#include "train/evaluator.h"
#include "train/model_setup.h"
#include "train/sampler.h"

namespace lmforge {

namespace {

class LmTask final : public Task {
public:
    LmTask(const TrainConfig& cfg, const Tokenizer* tokenizer)
        : cfg_(cfg), tokenizer_(tokenizer), T_(cfg.train.seq_len), shape_(causal_model_shape(cfg, T_)),
          sample_rng_(static_cast<uint64_t>(cfg.sample.seed)) {
        train_shards_ = find_shards(cfg.data.dir, "train");
        // No validation shards: no evaluation, said once. Shards that are there but damaged, or
        // too short for one window, are an error like the training split's.
        try {
            val_shards_ = find_shards(cfg.data.dir, "val");
        } catch (const InputError& e) {
            log::warn("no validation data ({}): evaluation is skipped", e.what());
        }
        check_prompt();
    }

    const char* name() const override { return "lm"; }
    std::unique_ptr<Model> make_model(backend::Gemm& gemm, Precision precision) override {
        return lmforge::make_model(cfg_, T_, 0, gemm, precision, parse_recompute(cfg_.train.recompute));
    }
    int64_t max_seq_len() const override { return T_; }

    int64_t requested_global_batch(int world) const override {
        const int64_t total = cfg_.train.total_batch_tokens;
        if (total <= 0) return 0;
        const int64_t B = cfg_.train.batch_size, per_step = B * T_ * world;
        if (total % per_step != 0) {
            throw InputError(fmt::format("train.total_batch_tokens = {} is not a multiple of batch_size · seq_len · "
                                         "processes = {}·{}·{} = {}",
                                         total, B, T_, world, per_step),
                             fmt::format("use a multiple of {}", per_step));
        }
        return total / T_;
    }

    void start(const BatchPlan& plan) override {
        plan_ = plan;
        const auto seed = static_cast<uint64_t>(cfg_.train.seed);
        train_ = std::make_unique<DataLoader>(DataLoaderOptions{cfg_.data.dir, "train", plan.B, T_, plan.rank,
                                                                plan.world, cfg_.data.shuffle, seed,
                                                                shape_.vocab_size});
        if (!val_shards_.empty()) {
            val_ = std::make_unique<DataLoader>(DataLoaderOptions{cfg_.data.dir, "val", plan.B, T_, plan.rank,
                                                                  plan.world, false, seed, shape_.vocab_size});
        }
    }
    void next_batch(Batch& batch) override {
        batch.resize_for_tokens(plan_.B, T_);
        train_->next_batch(batch.inputs.data(), batch.targets.data());
    }

    nlohmann::json data_state() const override {
        const DataLoaderState s = train_->state();
        return {{"loader", {{"epoch", s.epoch}, {"cursor", s.cursor}, {"windows", s.windows}, {"seed", s.seed}}},
                {"sample_rng", sample_rng_.state()}};
    }
    void restore(const nlohmann::json& state) override {
        const std::string where = "state.json's data.loader";
        const nlohmann::json& l = state.at("loader");
        train_->restore({json_int(l, "epoch", 0, kMaxCount, where), json_int(l, "cursor", 0, kMaxCount, where),
                         json_int(l, "windows", 0, kMaxCount, where), l.at("seed").get<uint64_t>()});
        sample_rng_.set_state(state.at("sample_rng").get<Rng::State>());
    }
    std::vector<std::string> data_files() const override {
        std::vector<std::string> files = train_shards_;
        files.insert(files.end(), val_shards_.begin(), val_shards_.end());
        return files;
    }

    bool has_validation() const override { return !val_shards_.empty(); }
    Evaluation evaluate(Model& model, Communicator& comm) override {
        const LossSum mine = evaluate_windows(model, *val_, plan_.eval_sequences);
        double sums[2] = {mine.sum, static_cast<double>(mine.count)};
        comm.allreduce_sum(sums, 2);
        const double loss = sums[1] > 0 ? sums[0] / sums[1] : std::nan("");
        return {.loss = loss, .metrics = {{"val_loss", loss}, {"val_perplexity", std::exp(loss)}}, .rank_metric = loss};
    }
    std::string describe(const Evaluation& e) const override {
        return fmt::format("val loss {:.4f}, perplexity {:.2f}", e.loss, std::exp(e.loss));
    }

    std::string describe_data() const override {
        return fmt::format("lm: data {} ({} train windows of {} tokens)", cfg_.data.dir, train_->windows_per_epoch(),
                           T_);
    }
    double flops_per_token(const Model& model) const override {
        return lmforge::flops_per_token(model, T_);
    }
    std::vector<std::string> samples(Model& model, backend::Gemm& gemm, int64_t count) override {
        std::vector<std::string> texts;
        for (int64_t i = 0; i < count; i++) texts.push_back(sample(dynamic_cast<CausalLm&>(model), gemm));
        return texts;
    }

    // What the run learned, in one line: the validation loss against a model that knows only
    // the training split's token frequencies (data/shard_check.h), the bar any model must clear;
    // best/'s where it is not the end's (a long run on a small text overfits).
    std::string report(Model& model, const ReportContext& ctx) override {
        (void)model;
        if (ctx.comm.rank() != 0 || !std::isfinite(ctx.val_loss)) return "";
        const double unigram = check_shards(cfg_.data.dir, shape_.vocab_size).unigram_val_loss;
        if (!std::isfinite(unigram)) return "";
        const bool best_earlier = std::isfinite(ctx.best_val_loss) && ctx.best_val_loss < ctx.val_loss;
        const double loss = best_earlier ? ctx.best_val_loss : ctx.val_loss;
        const std::string which = best_earlier ? fmt::format(" at best/ ({}), {:.1f} at the end", ctx.best,
                                                             std::exp(ctx.val_loss))
                                               : "";
        const std::string ratio = loss <= unigram ? fmt::format("{:.1f}x lower", std::exp(unigram - loss))
                                                  : fmt::format("{:.1f}x higher: not yet past it", std::exp(loss - unigram));
        return fmt::format("validation perplexity {:.1f}{}, against {:.1f} for a unigram model of the training split: "
                           "{} (loss {:.4f} against {:.4f})\n",
                           std::exp(loss), which, std::exp(unigram), ratio, loss, unigram);
    }

private:
    // A prompt longer than the context is refused before training, not at the first sample.
    void check_prompt() const {
        const bool sampling = cfg_.sample.every > 0 || cfg_.sample.count > 0;
        if (tokenizer_ == nullptr || cfg_.sample.prompt.empty() || !sampling) return;
        const size_t n = tokenizer_->encode_ordinary(cfg_.sample.prompt).size();
        if (n > static_cast<size_t>(shape_.context)) {
            throw InputError(fmt::format("sample.prompt is {} tokens, longer than the model's context ({} tokens)", n,
                                         shape_.context),
                             "shorten sample.prompt");
        }
    }

    std::string sample(CausalLm& model, backend::Gemm& gemm) {
        const int32_t start = tokenizer_ && tokenizer_->eot_id() ? *tokenizer_->eot_id() : 0;
        std::vector<int32_t> prompt = tokenizer_ && !cfg_.sample.prompt.empty()
                                          ? tokenizer_->encode_ordinary(cfg_.sample.prompt)
                                          : std::vector<int32_t>{start};
        if (prompt.empty()) prompt = {start};
        const std::unique_ptr<Decoder> decoder = model.decoder(gemm);
        const SampleOptions so{cfg_.sample.tokens, cfg_.sample.temperature, cfg_.sample.top_k, 1.0, std::nullopt};
        const std::vector<int32_t> ids = generate(*decoder, prompt, so, sample_rng_);
        if (tokenizer_) return cfg_.sample.prompt + tokenizer_->decode(ids);
        std::string text;
        for (const int32_t id : ids) text += std::to_string(id) + " ";
        return text;
    }

    const TrainConfig& cfg_;
    const Tokenizer* tokenizer_;
    int64_t T_;
    CausalShape shape_;
    std::vector<std::string> train_shards_, val_shards_;
    std::unique_ptr<DataLoader> train_, val_;
    BatchPlan plan_;
    Rng sample_rng_;
};

}  // namespace

std::unique_ptr<Task> make_lm_task(const TrainConfig& cfg, const Tokenizer* tokenizer) {
    return std::make_unique<LmTask>(cfg, tokenizer);
}

}  // namespace lmforge
