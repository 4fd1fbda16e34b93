// Checkpoints: one directory per save, written aside and renamed into place, so a crash or a
// full disk mid-save leaves the previous checkpoint as it was.
//   model.safetensors      weights with Hugging Face names and shapes (GPT-2's or BERT's);
//                          the architecture and shape in the metadata ("lmforge_config")
//   optimizer.safetensors  AdamW's moments, "m/<name>" and "v/<name>", F32 or BF16 as the run
//                          keeps them (a resume in the other precision converts them)
//   state.json             step, optimizer steps, data-loader position, sampling RNG, best
//                          validation loss, tokens seen
//   config.toml            the run's resolved configuration
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "core/rng.h"
#include "data/dataloader.h"
#include "model/bert_config.h"
#include "model/gpt2_config.h"
#include "model/model.h"
#include "optim/moments.h"

namespace lmforge {

struct TrainingState {
    int64_t step = 0;  // optimizer steps completed
    DataLoaderState loader;
    Rng::State sample_rng{};
    double best_val_loss = std::numeric_limits<double>::infinity();
    int64_t tokens_seen = 0;
    double train_seconds = 0;  // wall time spent training, over all sessions
    int64_t batch_tokens = 0;  // the global batch in tokens (0: a checkpoint from before it was kept)
    int64_t max_steps = 0;     // the length the schedule was laid over (0: likewise unknown)
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
// The architecture recorded in a model.safetensors: "gpt2" or "bert".
std::string read_model_arch(const std::string& path);
// The model shape recorded in a model.safetensors; InputError if it is of the other
// architecture.
Gpt2Config read_model_config(const std::string& path);
BertConfig read_bert_config(const std::string& path);

// Writes the whole checkpoint directory `dir` atomically; the moments must cover the layout.
void save_checkpoint(const std::string& dir, const Model& model, const OptimizerMoments& moments,
                     const TrainingState& state, const std::string& config_toml);
// Loads weights, moments (the part of the layout they stand for) and state from `dir` into a
// model of the same shape.
void load_checkpoint(const std::string& dir, Model& model, OptimizerMoments& moments, TrainingState& state);

}  // namespace lmforge
