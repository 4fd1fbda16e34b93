// The model a training config asks for: GPT-2 or BERT by model.preset, the preset's shape
// with model.* over it, and the vocabulary from the data.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "backend/gemm.h"
#include "distributed/data_parallel.h"
#include "model/bert_config.h"
#include "model/gpt2_config.h"
#include "model/llama_config.h"
#include "model/lora.h"
#include "model/gpt2_acts.h"
#include "model/model.h"
#include "tokenizer/encoder_specials.h"
#include "train/config.h"

namespace lmforge {

// model.preset names a BERT preset (bert-tiny .. bert-large): an encoder.
bool is_encoder(const TrainConfig& c);
// model.preset names a Llama preset (smollm2-135m, llama-3.2-1b, ...).
bool is_llama(const TrainConfig& c);

// Where the run's tokenizer comes from: data.tokenizer, else the files beside the shards.
inline std::string data_tokenizer_spec(const TrainConfig& c) {
    return c.data.tokenizer.empty() ? c.data.dir : c.data.tokenizer;
}

// The tokenizer's vocabulary: model.vocab_size, else the data directory's prepare.json
// (data_vocab_size); InputError if neither gives one.
int64_t tokenizer_vocab_size(const TrainConfig& c);

// model.* over the preset; the vocabulary from tokenizer_vocab_size; block_size at least
// seq_len (InputError if set below it).
Gpt2Config model_config(const TrainConfig& c, int64_t seq_len);
// The same for Llama (model.n_kv_head and model.intermediate too; where n_head or n_embd are
// set and they are not, in the preset's proportions).
LlamaConfig llama_model_config(const TrainConfig& c, int64_t seq_len);
// What the tasks of a causal model need before it exists: its vocabulary and context.
struct CausalShape {
    int64_t vocab_size, context;
};
CausalShape causal_model_shape(const TrainConfig& c, int64_t seq_len);
// The same for BERT (n_embd sets hidden, with the feed-forward 4 · hidden; block_size sets
// max_position); the vocabulary is the tokenizer's plus the encoder's special tokens.
BertConfig bert_model_config(const TrainConfig& c, int64_t seq_len);
// The encoder's special tokens for this config's data.
EncoderSpecials encoder_specials(const TrainConfig& c);

// GPT-2, Llama or BERT as the config says, with num_labels classes (0: its language-model head).
std::unique_ptr<Model> make_model(const TrainConfig& c, int64_t seq_len, int64_t num_labels, backend::Gemm& gemm,
                                  Precision precision, Recompute recompute);

// AdamW (optim.*) and data parallelism (optim.zero_stage, dist.*) over comm for the model.
std::unique_ptr<DataParallel> make_data_parallel(const TrainConfig& c, Communicator& comm, Model& model);

// lora.* as the model's options (off where lora.rank is 0); the base is model.init_from.
LoraOptions lora_options(const TrainConfig& c);

// model.init_from: the tensors of the model's layout that the checkpoint directory holds
// (InputError if it holds none of them; those it lacks, a new task's head, are logged).
void load_init_from(Model& model, const std::string& dir);

// "gpt2, 4 layers, 4 heads, width 256" from the model's recorded config.
std::string model_summary(const Model& model);

}  // namespace lmforge
