#include "train/mlm_trainer.h"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <numeric>

#include "backend/threads.h"
#include "core/error.h"
#include "core/file_io.h"
#include "core/log.h"
#include "core/timer.h"
#include "distributed/communicator.h"
#include "distributed/data_parallel.h"
#include "checkpoint/checkpoint.h"
#include "model/bert.h"
#include "optim/lr_schedule.h"
#include "train/metrics.h"
#include "train/mlm_batches.h"
#include "train/model_setup.h"
#include "train/task_run.h"

namespace lmforge {

namespace fs = std::filesystem;

namespace {

// Loss and accuracy over predicted (masked) tokens.
struct MlmTally {
    double loss_sum = 0, predicted = 0, correct = 0;
    void add(const Bert& model, double loss) {
        loss_sum += loss * static_cast<double>(model.mlm_predicted());
        predicted += static_cast<double>(model.mlm_predicted());
        correct += static_cast<double>(model.mlm_correct());
    }
    void sum_over(Communicator& comm) {
        loss_sum = comm.allreduce_sum(loss_sum);
        predicted = comm.allreduce_sum(predicted);
        correct = comm.allreduce_sum(correct);
    }
    double loss() const { return predicted > 0 ? loss_sum / predicted : 0.0; }
    double accuracy() const { return predicted > 0 ? correct / predicted : 0.0; }
};

}  // namespace

MlmSummary train_mlm(const TrainOptions& opts) {
    const TrainConfig& cfg = opts.config;
    if (!is_encoder(cfg)) {
        throw InputError(fmt::format("train.task = \"mlm\" needs a BERT model, not model.preset = \"{}\"",
                                     cfg.model.preset),
                         fmt::format("choose one of: {}", fmt::format("{}", fmt::join(BertConfig::preset_names(), ", "))));
    }
    Timer session;
    MlmSummary summary;
    summary.run_dir = run_dir_for(cfg, opts.config_path);
    const std::string& run = summary.run_dir;
    const int64_t B = cfg.train.batch_size, T = cfg.train.seq_len;
    if (T < 3) throw InputError(fmt::format("train.seq_len = {} leaves no room for [CLS] x [SEP]", T));
    const EncoderSpecials sp = encoder_specials(cfg);
    const int64_t ordinary = sp.pad;  // the tokenizer's own ids: what a random replacement draws from
    const int32_t eot = data_eot_id(cfg.data.dir);  // documents end at <|endoftext|>, as prepare recorded it
    const auto train_pieces = cut_pieces(read_split_tokens(cfg.data.dir, "train"), eot, T - 2);
    const auto val_pieces = cut_pieces(read_split_tokens(cfg.data.dir, "val"), eot, T - 2);
    if (train_pieces.empty()) throw InputError(fmt::format("{}: the training shards hold no tokens", cfg.data.dir));

    TaskRun task(cfg, run);
    Communicator* comm = &task.comm();
    const int world = task.world(), rank = task.rank();
    const bool lead = task.lead();
    Bert model(bert_model_config(cfg, T), task.gemm(), task.precision());
    task.start_model(model, B, T);
    DataParallel& dp = task.data_parallel();
    const int64_t steps = cfg.train.max_steps;
    const LrSchedule schedule = task.schedule(steps);
    MetricsLog* metrics = task.metrics();
    log::info("mlm: {} train / {} val pieces of at most {} tokens; masking 15% (80% [MASK], 10% random, 10% kept); {}",
              train_pieces.size(), val_pieces.size(), T - 2, task.describe());
    log::info("model: {}, {} parameters; {} steps of batch {} x {} processes, each padded to its longest piece",
              model_summary(model), model.layout().count(), steps, B, world);

    // Validation: this rank's share of the first eval.batches batches, masked alike every time.
    const auto evaluate = [&] {
        MlmTally tally;
        Rng rng(static_cast<uint64_t>(cfg.train.seed) + 1000);
        const auto n = static_cast<int64_t>(val_pieces.size());
        const int64_t batches = std::min<int64_t>(cfg.eval.batches, (n + B - 1) / B);
        for (int64_t k = 0; k < batches; k++) {
            std::vector<int64_t> idx;
            for (int64_t b = 0; b < B && k * B + b < n; b++) idx.push_back(k * B + b);
            MlmBatch batch = make_mlm_batch(val_pieces, idx, T, sp, ordinary, {}, rng);
            if (k % world != rank) continue;  // the same masks whatever the number of ranks
            model.plan(batch.B, batch.T);
            const double loss = model.forward_mlm(batch.inputs.data(), batch.lengths.data(), batch.targets.data());
            tally.add(model, loss);
        }
        tally.sum_over(*comm);
        return tally;
    };

    const auto n_train = static_cast<int64_t>(train_pieces.size());
    std::vector<int64_t> order(n_train);
    std::iota(order.begin(), order.end(), 0);
    Rng shuffle(static_cast<uint64_t>(cfg.train.seed) * 7919u);
    Rng masking(static_cast<uint64_t>(cfg.train.seed) * 104729u + static_cast<uint64_t>(rank));
    int64_t cursor = n_train;  // of this pass over `order`; a new pass reshuffles
    double best = INFINITY;
    MlmTally window;
    Timer window_timer;
    int64_t window_steps = 0;  // the steps window_timer has seen (fewer than log.every at the end)
    for (int64_t step = 0; step < steps; step++) {
        std::vector<int64_t> idx(B);
        for (int64_t b = 0; b < B * world; b++) {
            if (cursor == n_train) {  // the same permutation on every rank
                for (int64_t i = n_train; i > 1; i--) std::swap(order[i - 1], order[shuffle.below(static_cast<uint64_t>(i))]);
                cursor = 0;
            }
            const int64_t piece = order[cursor++];
            if (b / B == rank) idx[b % B] = piece;
        }
        const MlmBatch batch = make_mlm_batch(train_pieces, idx, T, sp, ordinary, {}, masking);
        model.plan(batch.B, batch.T);
        model.zero_grad();
        const float loss_scale = 1.0f / static_cast<float>(world);  // the mean over ranks
        model.expect_backward(loss_scale);  // the decoder's gradients in forward
        const double loss = model.forward_mlm(batch.inputs.data(), batch.lengths.data(), batch.targets.data());
        if (!std::isfinite(loss)) throw Error(fmt::format("step {}: the loss is {}", step, loss), "lower optim.lr");
        window.add(model, loss);
        dp.before_backward(true);
        model.backward(loss_scale);
        dp.step(static_cast<float>(schedule.at(step)), cfg.optim.grad_clip);

        window_steps++;
        const bool last = step + 1 == steps;
        if ((step + 1) % std::max<int64_t>(1, cfg.log.every) == 0 || last) {
            window.sum_over(*comm);
            summary.train_loss = window.loss();
            summary.train_accuracy = window.accuracy();
            log::info("step {}/{} | mlm loss {:.4f} | masked acc {:.4f} | lr {:.2e} | {:.0f} ms/step", step + 1, steps,
                      window.loss(), window.accuracy(), schedule.at(step),
                      1000 * window_timer.seconds() / static_cast<double>(window_steps));
            if (metrics) metrics->write(step + 1, "train", {{"loss", window.loss()}, {"masked_accuracy", window.accuracy()}});
            window = {};
            window_timer = Timer();
            window_steps = 0;
        }
        if ((cfg.eval.every > 0 && (step + 1) % cfg.eval.every == 0) || last) {
            const MlmTally val = evaluate();
            summary.val_loss = val.loss();
            summary.val_accuracy = val.accuracy();
            const bool is_best = val.loss() < best;
            log::info("step {} | val mlm loss {:.4f} | val masked acc {:.4f}{}", step + 1, val.loss(), val.accuracy(),
                      is_best ? " (best)" : "");
            if (metrics) metrics->write(step + 1, "val", {{"val_loss", val.loss()}, {"val_masked_accuracy", val.accuracy()}});
            if (is_best) {
                best = val.loss();
                if (lead) {
                    publish_directory(run + "/best", [&](const std::string& tmp) {
                        save_model_weights(model, tmp + "/model.safetensors");
                    });
                }
                comm->barrier();
            }
        }
    }
    if (lead) {
        publish_directory(run + "/final", [&](const std::string& tmp) { save_model_weights(model, tmp + "/model.safetensors"); });
    }
    comm->barrier();
    summary.steps = steps;
    summary.best_val_loss = best;
    summary.rank = rank;
    summary.seconds = session.seconds();
    task.write_plots();
    return summary;
}

}  // namespace lmforge
