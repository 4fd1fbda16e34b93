#include "train/classify_trainer.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>

#include "backend/gemm.h"
#include "backend/threads.h"
#include "core/error.h"
#include "core/file_io.h"
#include "core/log.h"
#include "core/rng.h"
#include "core/timer.h"
#include "data/labelled.h"
#include "distributed/communicator.h"
#include "distributed/data_parallel.h"
#include "checkpoint/checkpoint.h"
#include "optim/lr_schedule.h"
#include "train/baselines.h"
#include "train/metrics.h"
#include "train/model_setup.h"
#include "train/task_run.h"

namespace lmforge {

namespace fs = std::filesystem;

namespace {

// Loss and confusion matrix of a split, this rank's share (examples r, r + world, ...),
// summed over ranks.
struct SplitEval {
    double loss = 0;
    ConfusionMatrix matrix;
};

// How a model reads an example: GPT-2 its tokens as they are (pooled at the last one), BERT
// [CLS] tokens [SEP] (pooled at [CLS]), the two counted in the length limit as Hugging Face's
// tokenizers count them, so an example keeps at most max_len - 2 of its tokens.
struct Framing {
    bool encoder = false;
    int32_t cls = 0, sep = 0, pad = 0;
    int64_t extra() const { return encoder ? 2 : 0; }
};

class ClassifyRun {
public:
    ClassifyRun(Model& model, Communicator& comm, int64_t B, int64_t max_len, Framing framing)
        : model_(model), comm_(comm), B_(B), max_len_(max_len), framing_(framing), lengths_(B), labels_(B) {}

    // Fills the batch with examples idx (at most B; the rest repeat the first), padded to the
    // batch's longest (dynamic padding), rounded up to 16 so few shapes occur.
    void fill(const LabelledSplit& s, const std::vector<int64_t>& idx) {
        const auto kept = [&](int64_t i) { return std::min<int64_t>(s.lengths[i], max_len_ - framing_.extra()); };
        int64_t longest = 1;
        for (const int64_t i : idx) longest = std::max<int64_t>(longest, kept(i) + framing_.extra());
        const int64_t T = std::min(max_len_, (longest + 15) / 16 * 16);
        model_.plan(B_, T);
        x_.assign(B_ * T, framing_.pad);
        for (int64_t b = 0; b < B_; b++) {
            const int64_t i = idx[static_cast<size_t>(b) < idx.size() ? b : 0];
            const auto n = static_cast<int32_t>(kept(i));
            int32_t* row = x_.data() + b * T;
            if (framing_.encoder) *row++ = framing_.cls;
            std::copy_n(s.tokens.begin() + i * s.max_len, n, row);
            if (framing_.encoder) row[n] = framing_.sep;
            lengths_[b] = n + static_cast<int32_t>(framing_.extra());
            labels_[b] = s.labels[i];
        }
    }

    // One optimizer step on examples idx; returns (loss, correct) over them.
    std::pair<double, int64_t> train_step(DataParallel& dp, const LabelledSplit& s, const std::vector<int64_t>& idx,
                                         float lr, double clip) {
        fill(s, idx);
        model_.zero_grad();
        const double loss = model_.forward_classify(x_.data(), lengths_.data(), labels_.data());
        const int64_t correct = count_correct(static_cast<int64_t>(idx.size()));
        dp.before_backward(true);
        model_.backward(1.0f / static_cast<float>(comm_.size()));
        dp.step(lr, clip);
        return {loss, correct};
    }

    SplitEval evaluate(const LabelledSplit& s) {
        const int64_t L = model_.num_labels();
        SplitEval e{0.0, ConfusionMatrix(L)};
        std::vector<int64_t> mine;
        for (int64_t i = comm_.rank(); i < s.size(); i += comm_.size()) mine.push_back(i);
        for (size_t begin = 0; begin < mine.size(); begin += static_cast<size_t>(B_)) {
            const std::vector<int64_t> idx(mine.begin() + static_cast<int64_t>(begin),
                                           mine.begin() + static_cast<int64_t>(std::min(mine.size(), begin + B_)));
            fill(s, idx);
            model_.forward_classify(x_.data(), lengths_.data(), nullptr);
            for (size_t b = 0; b < idx.size(); b++) {
                const float* row = model_.class_logits() + b * L;
                const float max = *std::max_element(row, row + L);
                double sum = 0;
                for (int64_t j = 0; j < L; j++) sum += std::exp(static_cast<double>(row[j] - max));
                e.loss += max + std::log(sum) - row[labels_[b]];
                e.matrix.add(labels_[b], static_cast<int32_t>(std::max_element(row, row + L) - row));
            }
        }
        // Sum over ranks: the counts are exact in float up to 2^24 examples.
        std::vector<float> counts(e.matrix.counts().begin(), e.matrix.counts().end());
        comm_.allreduce_sum(counts.data(), static_cast<int64_t>(counts.size()));
        for (size_t k = 0; k < counts.size(); k++) e.matrix.counts()[k] = static_cast<int64_t>(counts[k]);
        e.loss = comm_.allreduce_sum(e.loss) / static_cast<double>(std::max<int64_t>(1, s.size()));
        return e;
    }

private:
    int64_t count_correct(int64_t n) const {
        const int64_t L = model_.num_labels();
        int64_t correct = 0;
        for (int64_t b = 0; b < n; b++) {
            const float* row = model_.class_logits() + b * L;
            correct += std::max_element(row, row + L) - row == labels_[b];
        }
        return correct;
    }

    Model& model_;
    Communicator& comm_;
    int64_t B_, max_len_;
    Framing framing_;
    std::vector<int32_t> x_, lengths_, labels_;
};

// The value eval.metric names, and whether a is better than b for it.
double metric_of(const std::string& metric, const SplitEval& e) {
    const ClassificationReport r = classification_report(e.matrix);
    if (metric == "accuracy") return r.accuracy;
    if (metric == "loss") return e.loss;
    return r.macro.f1;
}

}  // namespace

bool better_epoch(const std::string& metric, double value, double loss, double best, double best_loss) {
    if (metric == "loss") return value < best;
    return value > best || (value == best && loss < best_loss);
}

ClassifySummary train_classifier(const TrainOptions& opts) {
    const TrainConfig& cfg = opts.config;
    Timer session;
    ClassifySummary summary;
    summary.run_dir = run_dir_for(cfg, opts.config_path);
    summary.metric = cfg.eval.metric;
    const std::string& run = summary.run_dir;
    if (!fs::exists(cfg.data.dir + "/labels.json")) {
        throw InputError(fmt::format("{}: no labels.json: not labelled data", cfg.data.dir),
                         "prepare it with lmforge prepare --label-field NAME");
    }
    const LabelledData data = load_labelled_dir(cfg.data.dir);
    const int64_t L = static_cast<int64_t>(data.label_names.size()), T = data.train.max_len;
    Framing framing{.pad = data.pad_id};
    if (is_encoder(cfg)) {
        const EncoderSpecials sp = encoder_specials(cfg);
        framing = {.encoder = true, .cls = sp.cls, .sep = sp.sep, .pad = sp.pad};
        if (T < 3) {
            throw InputError(fmt::format("{}: examples of at most {} tokens leave no room for [CLS] text [SEP]",
                                         cfg.data.dir, T),
                             "prepare the data with --max-len 3 or more");
        }
    }

    const int64_t B = cfg.train.batch_size, n_train = data.train.size();
    // Checked before the run directory is touched: a refusal leaves an earlier run's records.
    if (n_train == 0) throw InputError(fmt::format("{}: the training split is empty", cfg.data.dir));
    if (data.val.size() == 0) {
        throw InputError(fmt::format("{}: the validation split is empty: the best epoch is chosen on it", cfg.data.dir),
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
    const int64_t per_step = B * world;
    const int64_t steps_per_epoch = (n_train + per_step - 1) / per_step;
    const int64_t total_steps = steps_per_epoch * cfg.train.epochs;
    const std::unique_ptr<Model> model_ptr =
        make_model(cfg, T, L, task.gemm(), task.precision(), parse_recompute(cfg.train.recompute));
    Model& model = *model_ptr;
    task.start_model(model, B, T);
    DataParallel& dp = task.data_parallel();
    const LrSchedule schedule = task.schedule(total_steps);
    MetricsLog* metrics = task.metrics();
    std::ifstream prep(cfg.data.dir + "/prepare.json");
    const auto prepared = nlohmann::json::parse(prep, nullptr, false);
    // Examples cut: when prepared (to T tokens), or for BERT also here, where [CLS] and [SEP]
    // leave T - 2 (which includes every example cut when prepared, as those have T tokens).
    int64_t truncated = prepared.is_object() ? prepared.value("truncated", int64_t{0}) : 0;
    if (framing.encoder) {
        truncated = 0;
        for (const LabelledSplit* split : {&data.train, &data.val, &data.test}) {
            truncated += std::count_if(split->lengths.begin(), split->lengths.end(),
                                       [&](int32_t n) { return n > T - framing.extra(); });
        }
    }
    log::info("classify: {} classes ({}), {} train / {} val / {} test examples of at most {} tokens ({} truncated{}); {}",
              L, fmt::join(data.label_names, ", "), n_train, data.val.size(), data.test.size(), T, truncated,
              framing.encoder ? ": [CLS] and [SEP] take 2 of them" : " when prepared", task.describe());
    log::info("model: {}, {} parameters; {} epochs of {} steps (batch {} x {} processes, each padded to its "
              "longest example)",
              model_summary(model), model.layout().count(), cfg.train.epochs, steps_per_epoch, B, world);
    ClassifyRun runner(model, *comm, B, T, framing);
    double best = cfg.eval.metric == "loss" ? INFINITY : -INFINITY, best_loss = INFINITY;
    int64_t step = 0;
    for (int64_t epoch = 1; epoch <= cfg.train.epochs; epoch++) {
        Timer epoch_timer;
        std::vector<int64_t> order(n_train);  // the same permutation on every rank
        std::iota(order.begin(), order.end(), 0);
        Rng rng(static_cast<uint64_t>(cfg.train.seed) * 1000003u + static_cast<uint64_t>(epoch));
        for (int64_t i = n_train; i > 1; i--) std::swap(order[i - 1], order[rng.below(static_cast<uint64_t>(i))]);
        double loss_sum = 0, seen = 0, correct = 0;
        for (int64_t s = 0; s < steps_per_epoch; s++, step++) {
            // This rank's B examples of the step's B·world; the last step wraps to the start.
            std::vector<int64_t> idx(B);
            for (int64_t b = 0; b < B; b++) idx[b] = order[(s * per_step + rank * B + b) % n_train];
            const auto [loss, right] =
                runner.train_step(dp, data.train, idx, static_cast<float>(schedule.at(step)), cfg.optim.grad_clip);
            if (!std::isfinite(loss)) throw Error(fmt::format("epoch {}: the loss is {}", epoch, loss), "lower optim.lr");
            loss_sum += loss * static_cast<double>(B);
            correct += static_cast<double>(right);
            seen += static_cast<double>(B);
        }
        loss_sum = comm->allreduce_sum(loss_sum);
        correct = comm->allreduce_sum(correct);
        seen = comm->allreduce_sum(seen);
        const SplitEval val = runner.evaluate(data.val);
        const ClassificationReport vr = classification_report(val.matrix);
        const double value = metric_of(cfg.eval.metric, val);
        const bool is_best = better_epoch(cfg.eval.metric, value, val.loss, best, best_loss);
        log::info("epoch {}/{} | train loss {:.4f} acc {:.4f} | val loss {:.4f} acc {:.4f} macro-F1 {:.4f}{} | {:.1f} s",
                  epoch, cfg.train.epochs, loss_sum / seen, correct / seen, val.loss, vr.accuracy, vr.macro.f1,
                  is_best ? " (best)" : "", epoch_timer.seconds());
        if (metrics) {
            metrics->write(epoch, "train", {{"loss", loss_sum / seen}, {"accuracy", correct / seen}});
            metrics->write(epoch, "val", {{"val_loss", val.loss}, {"val_accuracy", vr.accuracy}, {"val_macro_f1", vr.macro.f1}});
        }
        if (is_best) {
            best = value;
            best_loss = val.loss;
            summary.best_epoch = epoch;
            if (lead) {
                publish_directory(run + "/best", [&](const std::string& tmp) {
                    save_model_weights(model, tmp + "/model.safetensors");
                    write_text_atomic(tmp + "/labels.json", nlohmann::json{{"labels", data.label_names}, {"epoch", epoch}}.dump(2));
                });
            }
            comm->barrier();
        }
    }

    // The test report, from the best epoch's weights.
    load_model_weights(model, run + "/best/model.safetensors");
    model.weights_changed();
    const SplitEval test = runner.evaluate(data.test);
    const ClassificationReport tr = classification_report(test.matrix);
    const ConfusionMatrix majority = majority_baseline(data.train, data.test, L);
    const ConfusionMatrix bow = bag_of_words_baseline(data.train, data.test, L, model.vocab_size());
    const ClassificationReport mr = classification_report(majority), br = classification_report(bow);
    summary.report_text = fmt::format("test report (best epoch {} by val {}):\n{}\n", summary.best_epoch,
                                      cfg.eval.metric, format_report(tr, test.matrix, data.label_names));
    summary.report_text += fmt::format("{:<24} {:>9} {:>9}\n", "test", "accuracy", "macro-F1");
    for (const auto& [name, r] : {std::pair{"this model", tr}, std::pair{"majority class", mr},
                                  std::pair{"bag of words (NB)", br}}) {
        summary.report_text += fmt::format("{:<24} {:>9.4f} {:>9.4f}\n", name, r.accuracy, r.macro.f1);
    }
    summary.report_path = run + "/test_report.json";
    if (lead) {
        nlohmann::ordered_json j;
        j["model"] = report_json(tr, test.matrix, data.label_names);
        j["test_loss"] = test.loss;
        j["best_epoch"] = summary.best_epoch;
        j["metric"] = cfg.eval.metric;
        j["baselines"] = {{"majority_class", report_json(mr, majority, data.label_names)},
                          {"bag_of_words", report_json(br, bow, data.label_names)}};
        j["truncated_examples"] = truncated;
        write_text_atomic(summary.report_path, j.dump(2) + "\n");
        log::to_file(summary.report_text);
    }
    summary.epochs = cfg.train.epochs;
    summary.steps = step;
    summary.best_value = best;
    summary.test_accuracy = tr.accuracy;
    summary.test_macro_f1 = tr.macro.f1;
    summary.rank = rank;
    summary.seconds = session.seconds();
    task.write_plots();
    return summary;
}

}  // namespace lmforge
