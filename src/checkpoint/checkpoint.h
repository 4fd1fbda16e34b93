// Checkpoints: one directory per save, written aside and renamed into place, so a crash or a
// full disk mid-save leaves the previous checkpoint as it was.
//   model.safetensors      weights with Hugging Face names and shapes (GPT-2's or BERT's);
//                          the architecture and shape in the metadata ("lmforge_config")
//   optimizer.safetensors  AdamW's moments, "m/<name>" and "v/<name>", F32 or BF16 as the run
//                          keeps them (a resume in the other precision converts them)
//   state.json             the task, step, optimizer steps, the task's data position, best/'s
//                          evaluation, the global batch, tokens seen, the data's fingerprint
//   config.toml            the run's resolved configuration
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/batch.h"
#include "model/bert_config.h"
#include "model/gpt2_config.h"
#include "model/llama_config.h"
#include "model/model.h"
#include "optim/moments.h"

namespace lmforge {

struct TrainingState {
    std::string task = "lm";  // train.task of the run
    int64_t step = 0;         // optimizer steps completed
    // Where the task's data stands, and what else it draws at random (train/task.h).
    nlohmann::json data = nlohmann::json::object();
    // best/'s evaluation: the lowest (rank_metric, loss) so far (train/task.h), at best_step.
    double best_metric = std::numeric_limits<double>::infinity();
    double best_loss = std::numeric_limits<double>::infinity();
    int64_t best_step = -1;
    LossSum epoch_loss;        // the training losses of the epoch under way (epoch-based tasks)
    int64_t tokens_seen = 0;
    double train_seconds = 0;  // wall time spent training, over all sessions
    int64_t global_batch = 0;  // sequences per step, all processes (0: an older checkpoint's)
    int64_t batch_tokens = 0;  // an older lm checkpoint's global batch, in tokens
    int64_t max_steps = 0;     // the steps the schedule spans (0: unknown)
    int64_t budget_steps = 0;  // the length train.time_budget fixed (0: none yet)
    // fp16's dynamic loss scaling (optim/loss_scaler.h): the scale (0: the run is not fp16),
    // clean steps since it last changed, steps skipped on overflow.
    double loss_scale = 0;
    int64_t loss_scale_clean_steps = 0, skipped_steps = 0;
    int64_t eval_sequences = 0;  // an evaluation's sequences (train/task.h; 0: unknown)
    std::string data_fingerprint;  // of the files the task read (data/fingerprint.h)
    std::vector<std::string> first_samples;  // drawn from the untrained model (lm)
};

// model.safetensors alone: what export, sampling and evaluation need.
void save_model_weights(const Model& model, const std::string& path);
// InputError naming the file and the first tensor whose name or shape does not fit.
void load_model_weights(Model& model, const std::string& path);
// Loads every tensor of the model's layout that the file holds (shapes must agree) and
// returns the names it lacks: a classifier started from a language model keeps its own head,
// and so does one started from a classifier of another number of classes (its head's name
// is returned with the file's count).
std::vector<std::string> load_matching_weights(Model& model, const std::string& path);
// The architecture and shape recorded in a model.safetensors (Model::config_json()).
nlohmann::json read_model_json(const std::string& path);
// The architecture recorded in a model.safetensors: "gpt2", "llama", "bert" or "distilbert".
std::string read_model_arch(const std::string& path);

// Whether ARCH is an encoder the Bert class computes: "bert" or "distilbert".
inline bool is_bert_family(const std::string& arch) { return arch == "bert" || arch == "distilbert"; }

// The model shape recorded in a model.safetensors; InputError if it is of the other
// architecture.
Gpt2Config read_model_config(const std::string& path);
BertConfig read_bert_config(const std::string& path);
LlamaConfig read_llama_config(const std::string& path);

// Files a checkpoint holds beside the weights, as (name, content): config.toml, a task's own.
using CheckpointFiles = std::vector<std::pair<std::string, std::string>>;

// Writes the whole checkpoint directory `dir` atomically; the moments must cover the layout.
void save_checkpoint(const std::string& dir, const Model& model, const OptimizerMoments& moments,
                     const TrainingState& state, const CheckpointFiles& files);
// The training state alone (state.json), every number range-checked: InputError for a
// damaged or edited one.
TrainingState read_training_state(const std::string& dir);
// Loads weights, moments (the part of the layout they stand for) and state from `dir` into a
// model of the same shape.
void load_checkpoint(const std::string& dir, Model& model, OptimizerMoments& moments, TrainingState& state);

}  // namespace lmforge
