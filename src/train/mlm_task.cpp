#include "train/mlm_task.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "data/dataloader.h"
#include "data/prepare_record.h"
#include "model/bert.h"
#include "train/example_order.h"
#include "train/mlm_batches.h"
#include "train/model_setup.h"
#include "train/train_step.h"

namespace lmforge {

namespace {

// Validation masks are drawn from this key space, training's from the stream's positions.
constexpr uint64_t kValidationKeys = uint64_t{1} << 62;

class MlmTask final : public Task {
public:
    explicit MlmTask(const TrainConfig& cfg) : cfg_(cfg), T_(cfg.train.seq_len), order_(0, 0) {
        if (!is_encoder(cfg)) {
            throw InputError(fmt::format("train.task = \"mlm\" needs a BERT model, not model.preset = \"{}\"",
                                         cfg.model.preset),
                             fmt::format("choose one of: {}", fmt::join(BertConfig::preset_names(), ", ")));
        }
        if (T_ < 3) throw InputError(fmt::format("train.seq_len = {} leaves no room for [CLS] x [SEP]", T_));
        const EncoderSpecials sp = encoder_specials(cfg);
        // Random replacements draw from the tokenizer's own ids; documents end at
        // <|endoftext|>, as prepare recorded it.
        framing_ = {sp, sp.pad, T_, {}, static_cast<uint64_t>(cfg.train.seed)};
        const int32_t eot = data_eot_id(cfg.data.dir);
        train_ = cut_pieces(read_split_tokens(cfg.data.dir, "train"), eot, T_ - 2);
        val_ = cut_pieces(read_split_tokens(cfg.data.dir, "val"), eot, T_ - 2);
        if (train_.empty()) throw InputError(fmt::format("{}: the training shards hold no tokens", cfg.data.dir));
        order_ = ExampleOrder(static_cast<int64_t>(train_.size()), static_cast<uint64_t>(cfg.train.seed) * 7919u);
    }

    const char* name() const override { return "mlm"; }
    std::unique_ptr<Model> make_model(backend::Gemm& gemm, Precision precision) override {
        if (parse_recompute(cfg_.train.recompute) != Recompute::None) {
            throw InputError(fmt::format("train.recompute = \"{}\" is for GPT-2 models", cfg_.train.recompute),
                             "set train.recompute = \"none\" for a BERT model");
        }
        return std::make_unique<Bert>(bert_model_config(cfg_, T_), gemm, precision);
    }
    int64_t max_seq_len() const override { return T_; }

    void start(const BatchPlan& plan) override {
        plan_ = plan;
        position_ = 0;
    }
    // The stream of pieces runs on from pass to pass; a micro-batch takes B · world of it, this
    // process the B at its rank, each masked by its position in the stream.
    void next_batch(Batch& batch) override {
        const int64_t n = order_.size();
        std::vector<int64_t> idx(static_cast<size_t>(plan_.B));
        std::vector<uint64_t> keys(idx.size());
        for (int64_t b = 0; b < plan_.B; b++) {
            const int64_t at = position_ + plan_.rank * plan_.B + b;
            idx[b] = order_.at(at / n, at % n);
            keys[b] = static_cast<uint64_t>(at);
        }
        position_ += plan_.B * plan_.world;
        make_mlm_batch(batch, train_, idx, keys, framing_);
    }
    nlohmann::json data_state() const override { return {{"position", position_}, {"pieces", train_.size()}}; }
    void restore(const nlohmann::json& state) override {
        const int64_t position = state.at("position").get<int64_t>();
        if (position < 0 || state.at("pieces").get<size_t>() != train_.size()) {
            throw InputError(fmt::format("{}: the checkpoint's data position ({} of {} pieces) is not of this data",
                                         cfg_.data.dir, position, state.at("pieces").dump()),
                             "resume on the data the run was started with");
        }
        position_ = position;
    }
    std::vector<std::string> data_files() const override {
        std::vector<std::string> files = find_shards(cfg_.data.dir, "train");
        for (const std::string& f : find_shards(cfg_.data.dir, "val")) files.push_back(f);
        return files;
    }

    bool has_validation() const override { return !val_.empty(); }
    Evaluation evaluate(Model& model, Communicator& comm) override {
        // The first eval_sequences pieces in batches of B · world, each process its B of each,
        // each piece masked by its index: the same pieces and masks at every evaluation,
        // whatever the process count.
        const int64_t per_batch = plan_.B * comm.size();
        const int64_t n = std::min(static_cast<int64_t>(val_.size()), plan_.eval_sequences);
        LossSum mine;
        Batch batch;
        for (int64_t first = comm.rank() * plan_.B; first < n; first += per_batch) {
            std::vector<int64_t> idx;
            std::vector<uint64_t> keys;
            for (int64_t i = first; i < std::min(n, first + plan_.B); i++) {
                idx.push_back(i);
                keys.push_back(kValidationKeys + static_cast<uint64_t>(i));
            }
            make_mlm_batch(batch, val_, idx, keys, framing_);
            mine += model.forward(batch);
        }
        const LossSum all = sum_over(comm, mine);
        return {.loss = all.mean(),
                .metrics = {{"val_loss", all.mean()}, {"val_masked_accuracy", all.accuracy()}},
                .rank_metric = all.mean()};
    }
    std::string describe(const Evaluation& e) const override {
        return fmt::format("val mlm loss {:.4f}, masked accuracy {:.4f}", e.loss, e.metrics[1].second);
    }
    std::string describe_data() const override {
        return fmt::format("mlm: {} train / {} val pieces of at most {} tokens; masking 15% (80% [MASK], 10% random, "
                           "10% kept); batches padded to their longest piece",
                           train_.size(), val_.size(), T_ - 2);
    }

private:
    const TrainConfig& cfg_;
    int64_t T_;
    MlmFraming framing_;
    std::vector<std::vector<int32_t>> train_, val_;
    ExampleOrder order_;
    BatchPlan plan_;
    int64_t position_ = 0;  // pieces of the stream handed out, all processes together
};

}  // namespace

std::unique_ptr<Task> make_mlm_task(const TrainConfig& cfg) { return std::make_unique<MlmTask>(cfg); }

}  // namespace lmforge
