// What the one trainer (train/trainer.h) asks of a task, train.task: lm (next-token prediction
// on token shards), classify (labelled texts), mlm (masked LM for an encoder) and sft
// (instruction tuning). The trainer owns the loop and every guarantee of a run: the schedule,
// accumulation, the cadence of evaluations and checkpoints, signals, exact resume on any number
// of processes, logs and metrics. A task says what its model, a batch, an evaluation and its
// report are, and where its data stands, so that a checkpoint can bring it back.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "backend/gemm.h"
#include "distributed/communicator.h"
#include "model/batch.h"
#include "model/model.h"
#include "model/precision.h"
#include "tokenizer/tokenizer.h"
#include "train/config.h"

namespace lmforge {

// How a step's sequences are cut: each process takes B of every micro-batch, `accumulation`
// micro-batches a step.
struct BatchPlan {
    int64_t B = 1;
    int64_t accumulation = 1;
    int rank = 0, world = 1;
    // Sequences an evaluation of a split too large to evaluate whole takes: eval.batches ·
    // batch_size · processes when the run started, kept by its checkpoints, so that a run
    // resumed on another number of processes evaluates the same sequences.
    int64_t eval_sequences = 0;
    int64_t global() const { return B * accumulation * world; }  // sequences a step, all processes
};

// A validation pass, summed over processes.
struct Evaluation {
    double loss = 0;
    // As metrics.jsonl names them, val_loss first.
    std::vector<std::pair<std::string, double>> metrics;
    // best/ keeps the evaluation of the lowest (rank_metric, loss): the task's metric, negated
    // where higher is better, then the loss for ties.
    double rank_metric = 0;
    bool better_than(double best_metric, double best_loss) const {
        return rank_metric < best_metric || (rank_metric == best_metric && loss < best_loss);
    }
};

// What a task's end-of-run report may use besides the model.
struct ReportContext {
    Communicator& comm;
    backend::Gemm& gemm;
    const std::string& run_dir;
    int64_t best_step = -1;  // of best/ (-1: none)
    std::string best;        // "step 150, epoch 5": best/ for the report's heading
    double val_loss = 0;     // the last evaluation's (NaN: none)
    double best_val_loss = 0;  // best/'s evaluation loss (infinite: none)
};

class Task {
public:
    virtual ~Task() = default;

    // The model for this task's data (vocabulary, classes, context), its weights not yet set.
    virtual std::unique_ptr<Model> make_model(backend::Gemm& gemm, Precision precision) = 0;
    // (B, T) of the largest batch a process takes: the model plans for it once.
    virtual int64_t max_seq_len() const = 0;
    // Sequences in one pass over the training data, for a task that trains by epochs
    // (train.epochs); 0 for one that trains for train.max_steps.
    virtual int64_t epoch_size() const { return 0; }
    // The global batch the configuration asks for, in sequences (0: batch_size · processes).
    virtual int64_t requested_global_batch(int world) const {
        (void)world;
        return 0;
    }
    virtual const char* name() const = 0;  // train.task's value

    // The training data, cut as `plan` says, from its start; next_batch then gives this
    // process's share of each micro-batch in turn.
    virtual void start(const BatchPlan& plan) = 0;
    virtual void next_batch(Batch& batch) = 0;
    // Where the data stands (and anything else the task draws at random): what a checkpoint
    // keeps so that a resumed run goes on with the very next batch. restore() refuses (an
    // InputError) a state of other data.
    virtual nlohmann::json data_state() const = 0;
    virtual void restore(const nlohmann::json& state) = 0;
    // The files the task trains and evaluates on: a checkpoint records their fingerprint, and
    // a resume on other data is refused.
    virtual std::vector<std::string> data_files() const = 0;

    virtual bool has_validation() const { return true; }
    virtual Evaluation evaluate(Model& model, Communicator& comm) = 0;
    // The log line of an evaluation at `step`, after "step N: ".
    virtual std::string describe(const Evaluation& e) const = 0;

    // One line on the data and the batches, for the log.
    virtual std::string describe_data() const = 0;
    // Model FLOPs a training token costs (0: not counted; no utilisation is shown).
    virtual double flops_per_token(const Model& model) const {
        (void)model;
        return 0;
    }
    // Texts the model generates, for the log during training and at the end (lm).
    virtual std::vector<std::string> samples(Model& model, backend::Gemm& gemm, int64_t count) {
        (void)model, (void)gemm, (void)count;
        return {};
    }
    // Files every checkpoint holds beside the weights, as (name, content): classify's labels.
    virtual std::vector<std::pair<std::string, std::string>> checkpoint_files() const { return {}; }
    // A classifier's class names, for config.json's id2label (none for other tasks).
    virtual std::vector<std::string> label_names() const { return {}; }
    // Whether the report is of best/'s weights (else the last step's).
    virtual bool report_on_best() const { return false; }
    // The end of the run (a test report, completions), computed by every process; the lead's
    // is printed and logged.
    virtual std::string report(Model& model, const ReportContext& ctx) {
        (void)model, (void)ctx;
        return "";
    }
};

// The task train.task names, its data loaded and checked (InputError) before anything is
// written. The tokenizer of the data (null if it has none) outlives the task.
std::unique_ptr<Task> make_task(const TrainConfig& cfg, const Tokenizer* tokenizer);

}  // namespace lmforge
