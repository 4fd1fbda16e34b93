#include "train/classify_task.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "core/file_io.h"
#include "core/log.h"
#include "data/labelled.h"
#include "train/baselines.h"
#include "train/classification_report.h"
#include "train/example_order.h"
#include "train/model_setup.h"

namespace lmforge {

namespace {

// How a model reads an example: GPT-2 its tokens as they are (pooled at the last one), BERT
// [CLS] tokens [SEP] (pooled at [CLS]), the two counted in the length limit as Hugging Face's
// tokenizers count them, so an example keeps at most max_len - 2 of its tokens.
struct Framing {
    bool encoder = false;
    int32_t cls = 0, sep = 0, pad = 0;
    int64_t extra() const { return encoder ? 2 : 0; }
};

// Loss and confusion matrix of a split, summed over processes.
struct SplitEval {
    double loss = 0;
    ConfusionMatrix matrix;
};

class ClassifyTask final : public Task {
public:
    explicit ClassifyTask(const TrainConfig& cfg) : cfg_(cfg), data_(load(cfg)), batches_(data_.train.size(), seed()) {
        T_ = data_.train.max_len;
        framing_.pad = data_.pad_id;
        if (is_encoder(cfg)) {
            const EncoderSpecials sp = encoder_specials(cfg);
            framing_ = {.encoder = true, .cls = sp.cls, .sep = sp.sep, .pad = sp.pad};
            if (T_ < 3) {
                throw InputError(fmt::format("{}: examples of at most {} tokens leave no room for [CLS] text [SEP]",
                                             cfg.data.dir, T_),
                                 "prepare the data with --max-len 3 or more");
            }
        }
    }

    const char* name() const override { return "classify"; }
    std::unique_ptr<Model> make_model(backend::Gemm& gemm, Precision precision) override {
        return lmforge::make_model(cfg_, T_, classes(), gemm, precision, parse_recompute(cfg_.train.recompute));
    }
    int64_t max_seq_len() const override { return T_; }
    int64_t epoch_size() const override { return data_.train.size(); }

    void start(const BatchPlan& plan) override {
        plan_ = plan;
        batches_.start(plan);
    }
    void next_batch(Batch& batch) override { fill(batch, data_.train, batches_.next()); }
    nlohmann::json data_state() const override { return batches_.state(); }
    void restore(const nlohmann::json& state) override { batches_.restore(state, cfg_.data.dir); }
    std::vector<std::string> data_files() const override { return split_files(cfg_.data.dir, "labels.json"); }

    Evaluation evaluate(Model& model, Communicator& comm) override {
        const SplitEval e = evaluate_split(model, comm, data_.val);
        const ClassificationReport r = classification_report(e.matrix);
        return {.loss = e.loss,
                .metrics = {{"val_loss", e.loss}, {"val_accuracy", r.accuracy}, {"val_macro_f1", r.macro.f1}},
                .rank_metric = classify_rank_metric(cfg_.eval.metric, e.loss, r.accuracy, r.macro.f1)};
    }
    std::string describe(const Evaluation& e) const override {
        return fmt::format("val loss {:.4f}, accuracy {:.4f}, macro-F1 {:.4f}", e.loss, e.metrics[1].second,
                           e.metrics[2].second);
    }
    std::string describe_data() const override;

    std::vector<std::pair<std::string, std::string>> checkpoint_files() const override {
        return {{"labels.json", nlohmann::json{{"labels", data_.label_names}}.dump(2) + "\n"}};
    }
    std::vector<std::string> label_names() const override { return data_.label_names; }
    bool report_on_best() const override { return true; }
    std::string report(Model& model, const ReportContext& ctx) override;

private:
    static LabelledData load(const TrainConfig& cfg);
    uint64_t seed() const { return static_cast<uint64_t>(cfg_.train.seed); }
    int64_t classes() const { return static_cast<int64_t>(data_.label_names.size()); }
    int64_t kept(const LabelledSplit& s, int64_t i) const {
        return std::min<int64_t>(s.lengths[i], T_ - framing_.extra());
    }
    // Examples idx as a batch of their own size, padded to the batch's longest (dynamic
    // padding), rounded up to 16 so that few shapes occur.
    void fill(Batch& batch, const LabelledSplit& s, const std::vector<int64_t>& idx) const;
    SplitEval evaluate_split(Model& model, Communicator& comm, const LabelledSplit& s) const;
    int64_t truncated() const;

    const TrainConfig& cfg_;
    LabelledData data_;
    EpochBatches batches_;
    BatchPlan plan_;
    int64_t T_ = 0;
    Framing framing_;
};

LabelledData ClassifyTask::load(const TrainConfig& cfg) {
    if (!std::filesystem::exists(cfg.data.dir + "/labels.json")) {
        throw InputError(fmt::format("{}: no labels.json: not labelled data", cfg.data.dir),
                         "prepare it with lmforge prepare --label-field NAME");
    }
    LabelledData data = load_labelled_dir(cfg.data.dir);
    check_splits(cfg.data.dir, data.train.size(), data.val.size(), data.test.size());
    return data;
}

void ClassifyTask::fill(Batch& batch, const LabelledSplit& s, const std::vector<int64_t>& idx) const {
    int64_t longest = 1;
    for (const int64_t i : idx) longest = std::max<int64_t>(longest, kept(s, i) + framing_.extra());
    batch.B = static_cast<int64_t>(idx.size());
    batch.T = std::min(T_, (longest + 15) / 16 * 16);
    batch.inputs.assign(static_cast<size_t>(batch.B * batch.T), framing_.pad);
    batch.lengths.resize(idx.size());
    batch.labels.resize(idx.size());
    batch.targets.clear();
    for (int64_t b = 0; b < batch.B; b++) {
        const int64_t i = idx[b];
        const auto n = static_cast<int32_t>(kept(s, i));
        int32_t* row = batch.inputs.data() + b * batch.T;
        if (framing_.encoder) *row++ = framing_.cls;
        std::copy_n(s.tokens.begin() + i * s.max_len, n, row);
        if (framing_.encoder) row[n] = framing_.sep;
        batch.lengths[b] = n + static_cast<int32_t>(framing_.extra());
        batch.labels[b] = s.labels[i];
    }
}

SplitEval ClassifyTask::evaluate_split(Model& model, Communicator& comm, const LabelledSplit& s) const {
    const int64_t L = classes();
    SplitEval e{0.0, ConfusionMatrix(L)};
    Batch batch;
    for_each_batch_of_share(s.size(), comm.rank(), comm.size(), plan_.B, [&](const std::vector<int64_t>& idx) {
        fill(batch, s, idx);
        e.loss += model.forward(batch).sum;
        for (int64_t b = 0; b < batch.B; b++) {
            const float* row = model.class_logits() + b * L;
            e.matrix.add(batch.labels[b], static_cast<int32_t>(std::max_element(row, row + L) - row));
        }
    });
    std::vector<double> sums(e.matrix.counts().begin(), e.matrix.counts().end());
    sums.push_back(e.loss);
    comm.allreduce_sum(sums.data(), static_cast<int64_t>(sums.size()));
    for (size_t k = 0; k + 1 < sums.size(); k++) e.matrix.counts()[k] = static_cast<int64_t>(sums[k]);
    e.loss = sums.back() / static_cast<double>(std::max<int64_t>(1, s.size()));
    return e;
}

int64_t ClassifyTask::truncated() const {
    // Examples cut: when prepared (to T tokens), or for BERT also here, where [CLS] and [SEP]
    // leave T - 2 (which includes every example cut when prepared, as those have T tokens).
    if (!framing_.encoder) return data_.truncated;
    int64_t n = 0;
    for (const LabelledSplit* split : {&data_.train, &data_.val, &data_.test}) {
        n += std::count_if(split->lengths.begin(), split->lengths.end(),
                           [&](int32_t len) { return len > T_ - framing_.extra(); });
    }
    return n;
}

std::string ClassifyTask::describe_data() const {
    return fmt::format("classify: {} classes ({}), {} train / {} val / {} test examples of at most {} tokens ({} "
                       "truncated{}), batches padded to their longest example",
                       classes(), fmt::join(data_.label_names, ", "), data_.train.size(), data_.val.size(),
                       data_.test.size(), T_, truncated(),
                       framing_.encoder ? ": [CLS] and [SEP] take 2 of them" : " when prepared");
}

std::string ClassifyTask::report(Model& model, const ReportContext& ctx) {
    const SplitEval test = evaluate_split(model, ctx.comm, data_.test);
    const ClassificationReport tr = classification_report(test.matrix);
    const int64_t L = classes();
    const ConfusionMatrix majority = majority_baseline(data_.train, data_.test, L);
    const ConfusionMatrix bow = bag_of_words_baseline(data_.train, data_.test, L, model.vocab_size());
    const ClassificationReport mr = classification_report(majority), br = classification_report(bow);
    std::string text = fmt::format("test report (best/ from {}, by val {}):\n{}\n", ctx.best, cfg_.eval.metric,
                                   format_report(tr, test.matrix, data_.label_names));
    text += fmt::format("{:<24} {:>9} {:>9}\n", "test", "accuracy", "macro-F1");
    for (const auto& [name, r] : {std::pair{"this model", tr}, std::pair{"majority class", mr},
                                  std::pair{"bag of words (NB)", br}}) {
        text += fmt::format("{:<24} {:>9.4f} {:>9.4f}\n", name, r.accuracy, r.macro.f1);
    }
    if (ctx.comm.rank() == 0) {
        nlohmann::ordered_json j;
        j["model"] = report_json(tr, test.matrix, data_.label_names);
        j["test_loss"] = test.loss;
        j["metric"] = cfg_.eval.metric;
        j["best_step"] = ctx.best_step;
        j["baselines"] = {{"majority_class", report_json(mr, majority, data_.label_names)},
                          {"bag_of_words", report_json(br, bow, data_.label_names)}};
        j["truncated_examples"] = truncated();
        write_text_atomic(ctx.run_dir + "/test_report.json", j.dump(2) + "\n");
    }
    return text + fmt::format("report: {}/test_report.json\n", ctx.run_dir);
}

}  // namespace

double classify_rank_metric(const std::string& metric, double loss, double accuracy, double macro_f1) {
    if (metric == "loss") return loss;
    return metric == "accuracy" ? -accuracy : -macro_f1;
}

std::unique_ptr<Task> make_classify_task(const TrainConfig& cfg) { return std::make_unique<ClassifyTask>(cfg); }

}  // namespace lmforge
