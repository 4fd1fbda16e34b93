#include "train/sft_trainer.h"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <numeric>

#include "backend/threads.h"
#include "core/error.h"
#include "core/file_io.h"
#include "core/log.h"
#include "core/rng.h"
#include "core/timer.h"
#include "data/instructions.h"
#include "distributed/communicator.h"
#include "distributed/data_parallel.h"
#include "checkpoint/checkpoint.h"
#include "kernels/crossentropy.h"
#include "model/gpt2.h"
#include "model/gpt2_decoder.h"
#include "optim/lr_schedule.h"
#include "train/metrics.h"
#include "train/model_setup.h"
#include "train/task_run.h"
#include "train/sampler.h"

namespace lmforge {

namespace fs = std::filesystem;

namespace {

// Inputs and response-only targets for examples idx (B rows: missing rows repeat the first,
// without targets), padded to the batch's longest input, rounded up to 16.
struct SftBatch {
    int64_t T = 0;
    std::vector<int32_t> x, y;
};

SftBatch make_batch(const InstructionSplit& s, const std::vector<int64_t>& idx, int64_t B, int32_t pad) {
    SftBatch batch;
    int64_t longest = 1;
    for (const int64_t i : idx) longest = std::max<int64_t>(longest, s.lengths[i] - 1);
    batch.T = std::min(s.max_len, (longest + 15) / 16 * 16);
    const int64_t T = batch.T;
    batch.x.assign(B * T, pad);
    batch.y.assign(B * T, kernels::kIgnoreIndex);
    for (int64_t b = 0; b < B; b++) {
        const bool real = b < static_cast<int64_t>(idx.size());
        const int64_t i = idx[real ? b : 0];
        const int32_t* tokens = s.tokens.data() + i * s.max_len;
        const int64_t n = s.lengths[i] - 1;  // inputs: all but the last token
        std::copy_n(tokens, n, batch.x.begin() + b * T);
        // Position t predicts token t + 1: a target where that token is the response's.
        for (int64_t t = s.prompt_lengths[i] - 1; real && t < n; t++) batch.y[b * T + t] = tokens[t + 1];
    }
    return batch;
}

// Response-token loss and exact matches over a split, this rank's share, summed over ranks.
struct SftEval {
    double loss_sum = 0, tokens = 0, exact = 0, examples = 0;
    double loss() const { return tokens > 0 ? loss_sum / tokens : 0.0; }
    double exact_match() const { return examples > 0 ? exact / examples : 0.0; }
};

SftEval evaluate(Gpt2& model, Communicator& comm, const InstructionSplit& s, int64_t B, int32_t pad) {
    SftEval e;
    std::vector<int64_t> mine;
    for (int64_t i = comm.rank(); i < s.size(); i += comm.size()) mine.push_back(i);
    for (size_t begin = 0; begin < mine.size(); begin += static_cast<size_t>(B)) {
        const std::vector<int64_t> idx(mine.begin() + static_cast<int64_t>(begin),
                                       mine.begin() + static_cast<int64_t>(std::min(mine.size(), begin + B)));
        const SftBatch batch = make_batch(s, idx, B, pad);
        model.plan(B, batch.T);
        model.forward(batch.x.data(), batch.y.data());
        for (size_t b = 0; b < idx.size(); b++) {
            bool all_top = true;
            for (int64_t t = 0; t < batch.T; t++) {
                const int64_t i = static_cast<int64_t>(b) * batch.T + t;
                if (batch.y[i] == kernels::kIgnoreIndex) continue;
                e.loss_sum += model.token_losses()[i];
                e.tokens += 1;
                all_top = all_top && model.target_is_top(i);
            }
            e.exact += all_top ? 1 : 0;
            e.examples += 1;
        }
    }
    for (double* x : {&e.loss_sum, &e.tokens, &e.exact, &e.examples}) *x = comm.allreduce_sum(*x);
    return e;
}

}  // namespace

SftSummary train_sft(const TrainOptions& opts) {
    const TrainConfig& cfg = opts.config;
    Timer session;
    SftSummary summary;
    summary.run_dir = run_dir_for(cfg, opts.config_path);
    const std::string& run = summary.run_dir;
    if (is_encoder(cfg)) {
        throw InputError(fmt::format("train.task = \"sft\" needs a GPT-2 model, not model.preset = \"{}\"",
                                     cfg.model.preset),
                         "generative fine-tuning continues text; choose a gpt2 preset");
    }
    if (!fs::exists(cfg.data.dir + "/instructions.json")) {
        throw InputError(fmt::format("{}: no instructions.json: not instruction data", cfg.data.dir),
                         "prepare it with lmforge prepare --instructions");
    }
    const InstructionData data = load_instructions_dir(cfg.data.dir);
    const int64_t T = data.train.max_len, B = cfg.train.batch_size, n_train = data.train.size();
    if (n_train == 0) throw InputError(fmt::format("{}: the training split is empty", cfg.data.dir));

    if (data.val.size() == 0) {
        throw InputError(fmt::format("{}: the validation split is empty: the best epoch is chosen by validation loss",
                                     cfg.data.dir),
                         "prepare the data with --val-fraction above 0");
    }
    if (data.test.size() == 0) {
        throw InputError(fmt::format("{}: the test split is empty: the run ends in a test report on it", cfg.data.dir),
                         "prepare the data with --test-fraction above 0");
    }
    TaskRun task(cfg, run);
    Communicator* comm = &task.comm();
    const int world = task.world(), rank = task.rank();
    const bool lead = task.lead();
    Gpt2 model(model_config(cfg, T), task.gemm(), task.precision(), parse_recompute(cfg.train.recompute));
    task.start_model(model, B, T);
    DataParallel& dp = task.data_parallel();
    const int64_t per_step = B * world, steps_per_epoch = (n_train + per_step - 1) / per_step;
    const LrSchedule schedule = task.schedule(steps_per_epoch * cfg.train.epochs);
    MetricsLog* metrics = task.metrics();
    log::info("sft: {} train / {} val / {} test examples ({}) of at most {} tokens, {} responses cut to fit; loss on "
              "response tokens only; {}",
              n_train, data.val.size(), data.test.size(), data.format, T, data.truncated, task.describe());
    log::info("model: {}, {} parameters; {} epochs of {} steps (batch {} x {} processes, each padded to its longest "
              "example)",
              model_summary(model), model.layout().count(), cfg.train.epochs, steps_per_epoch, B, world);

    double best = INFINITY;
    int64_t step = 0;
    for (int64_t epoch = 1; epoch <= cfg.train.epochs; epoch++) {
        Timer epoch_timer;
        std::vector<int64_t> order(n_train);  // the same permutation on every rank
        std::iota(order.begin(), order.end(), 0);
        Rng rng(static_cast<uint64_t>(cfg.train.seed) * 1000003u + static_cast<uint64_t>(epoch));
        for (int64_t i = n_train; i > 1; i--) std::swap(order[i - 1], order[rng.below(static_cast<uint64_t>(i))]);
        double loss_sum = 0, tokens = 0;
        for (int64_t s = 0; s < steps_per_epoch; s++, step++) {
            std::vector<int64_t> idx(B);  // this rank's B of the step's B·world; the last step wraps
            for (int64_t b = 0; b < B; b++) idx[b] = order[(s * per_step + rank * B + b) % n_train];
            const SftBatch batch = make_batch(data.train, idx, B, data.pad_id);
            model.plan(B, batch.T);
            model.zero_grad();
            model.expect_backward(1.0f / static_cast<float>(world));
            const double loss = model.forward(batch.x.data(), batch.y.data());
            if (!std::isfinite(loss)) throw Error(fmt::format("epoch {}: the loss is {}", epoch, loss), "lower optim.lr");
            const double counted = static_cast<double>(
                std::count_if(batch.y.begin(), batch.y.end(), [](int32_t t) { return t != kernels::kIgnoreIndex; }));
            loss_sum += loss * counted;
            tokens += counted;
            dp.before_backward(true);
            model.backward(1.0f / static_cast<float>(world));
            dp.step(static_cast<float>(schedule.at(step)), cfg.optim.grad_clip);
        }
        loss_sum = comm->allreduce_sum(loss_sum);
        tokens = comm->allreduce_sum(tokens);
        const SftEval val = evaluate(model, *comm, data.val, B, data.pad_id);
        const bool is_best = val.loss() < best;
        log::info("epoch {}/{} | train loss {:.4f} | val loss {:.4f} (perplexity {:.2f}) exact match {:.4f}{} | {:.1f} s",
                  epoch, cfg.train.epochs, loss_sum / std::max(1.0, tokens), val.loss(), std::exp(val.loss()),
                  val.exact_match(), is_best ? " (best)" : "", epoch_timer.seconds());
        if (metrics) {
            metrics->write(epoch, "train", {{"loss", loss_sum / std::max(1.0, tokens)}});
            metrics->write(epoch, "val", {{"val_loss", val.loss()}, {"val_exact_match", val.exact_match()}});
        }
        if (is_best) {
            best = val.loss();
            summary.best_epoch = epoch;
            if (lead) {
                publish_directory(run + "/best", [&](const std::string& tmp) {
                    save_model_weights(model, tmp + "/model.safetensors");
                });
            }
            comm->barrier();
        }
    }

    // The test split, from the best epoch's weights.
    load_model_weights(model, run + "/best/model.safetensors");
    model.weights_changed();
    const SftEval test = evaluate(model, *comm, data.test, B, data.pad_id);
    summary.test_loss = test.loss();
    summary.test_exact_match = test.exact_match();
    summary.test_examples = static_cast<int64_t>(test.examples);
    log::info("test (best epoch {}): loss {:.4f} (perplexity {:.2f}) on response tokens; exact match {:.4f} of {} "
              "responses",
              summary.best_epoch, test.loss(), std::exp(test.loss()), test.exact_match(), summary.test_examples);
    if (lead) {
        const Tokenizer* tokenizer = task.tokenizer();
        if (tokenizer == nullptr) log::warn("no tokenizer beside the data: no completions shown");
        Gpt2Decoder decoder(model, task.gemm());
        Rng rng(static_cast<uint64_t>(cfg.sample.seed));
        for (int64_t k = 0; tokenizer && k < std::min<int64_t>(3, data.test.size()); k++) {
            const int32_t* tokens = data.test.tokens.data() + k * T;
            const int64_t p = data.test.prompt_lengths[k], n = data.test.lengths[k];
            decoder.reset();
            const std::vector<int32_t> out =
                generate(decoder, std::span<const int32_t>(tokens, p),
                         {.max_new_tokens = T - p, .temperature = 0.0, .stop_token = data.pad_id}, rng);
            std::vector<int32_t> reference(tokens + p, tokens + n);
            const auto strip = [&](std::vector<int32_t> ids) {
                if (!ids.empty() && ids.back() == data.pad_id) ids.pop_back();
                return tokenizer->decode(ids);
            };
            summary.samples.emplace_back(strip(reference), strip(out));
        }
    }
    summary.epochs = cfg.train.epochs;
    summary.steps = step;
    summary.best_val_loss = best;
    summary.rank = rank;
    summary.seconds = session.seconds();
    task.write_plots();
    return summary;
}

}  // namespace lmforge
