// A training run's configuration: TOML sections model, data, train, optim, distill, lora, dist, eval,
// checkpoint, log, sample and run. Every key is declared once (visit_config), with its default and a line
// of documentation; parsing, --set overrides, the resolved dump and docs/config.md all come
// from that one list. Unknown keys and bad values are InputErrors naming the key (and the
// file's line), with the nearest valid key suggested.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace lmforge {

struct TrainConfig {
    struct Model {
        std::string preset = "gpt2-mini";
        int64_t n_layer = 0, n_head = 0, n_embd = 0;  // 0: from the preset
        int64_t n_kv_head = 0, intermediate = 0;        // Llama's; 0: from the preset
        int64_t block_size = 0;  // 0: from the preset, raised to train.seq_len if shorter
        int64_t vocab_size = 0;  // 0: the data's tokenizer's
        std::string init_from;   // a checkpoint directory to start from (weights only)
    } model;
    struct Data {
        std::string dir;        // shards from lmforge prepare
        std::string tokenizer;  // empty: the tokenizer saved beside the shards
        bool shuffle = true;
    } data;
    struct Train {
        int64_t batch_size = 8;            // micro-batch B, per process
        int64_t seq_len = 256;             // T
        int64_t total_batch_tokens = 0;    // per optimizer step, all processes; 0: B·T·world
        int64_t max_steps = 1000;
        double time_budget = 0;            // minutes (lm, mlm): max_steps becomes what fits; 0: off
        int64_t seed = 1337;
        int64_t threads = 0;               // 0: every core (per process: cores / processes)
        std::string precision = "auto";
        double loss_scale = 65536;         // fp16: the initial dynamic loss scale (2^16)
        std::string recompute = "none";
        std::string grads = "fp32";  // bf16 (with bf16 precision): half the gradients' memory
        std::string task = "lm";  // lm; classify (prepare --label-field); mlm (BERT); sft (prepare --instructions); distill
        int64_t epochs = 3;       // classify: passes over the training split
    } train;
    struct Optim {
        double lr = 6e-4;
        double min_lr_ratio = 0.1;
        int64_t warmup_steps = 100;
        double weight_decay = 0.1;
        double grad_clip = 1.0;
        std::string schedule = "cosine";  // cosine, linear, constant
        double beta1 = 0.9, beta2 = 0.95, eps = 1e-8;
        int64_t zero_stage = 0;  // 1: shard Adam's moments over the processes (ZeRO-1)
        std::string moments = "fp32";  // bf16: half the moments' memory (stochastic rounding)
    } optim;
    struct Distill {
        std::string teacher;       // checkpoint directory of the teacher (train.task = "distill")
        double temperature = 2.0;  // T of the softened distributions
        double kl_weight = 0.5;    // weight of T² · KL(teacher ‖ student)
        double task_weight = 0.5;  // weight of the task's own loss (CLM or MLM)
        double cosine_weight = 0;  // weight of 1 − cos between the final hidden states (equal widths)
    } distill;
    struct Lora {
        int64_t rank = 0;  // > 0: fine-tune adapters of this rank over model.init_from, frozen
        double alpha = 16;
        double dropout = 0;
        std::string targets = "q_proj,k_proj,v_proj,o_proj";
    } lora;
    struct Dist {
        double bucket_mb = 25;  // gradient buckets all-reduced during backward
        bool overlap = true;
    } dist;
    struct Eval {
        int64_t every = 100;   // steps; 0: only at the end
        int64_t batches = 20;  // validation batches per evaluation
        std::string metric = "macro_f1";  // classify: the best checkpoint's (macro_f1, accuracy, loss)
        std::string multiple_choice;        // lm: HellaSwag-format JSONL scored as it trains (empty: none)
        int64_t multiple_choice_every = 0;  // steps; 0: eval.every's
    } eval;
    struct Checkpoint {
        int64_t every = 500;   // steps; 0: only at the end
        int64_t keep_last = 3;
    } checkpoint;
    struct Log {
        int64_t every = 10;
        bool tensorboard = true;
        bool plots = true;
        double peak_gflops = 0.0;  // for the MFU figure; 0: measured, peak_gflops(precision)
        std::string mlflow_uri;    // an MLflow tracking server; empty: none
        std::string mlflow_experiment = "lmforge";
        std::string run_name;      // in MLflow; empty: the run directory's name
    } log;
    struct Sample {
        int64_t every = 0;  // steps; 0: none during training
        int64_t tokens = 64;
        std::string prompt;
        double temperature = 1.0;
        int64_t top_k = 40;
        int64_t seed = 42;
        int64_t count = 1;  // samples shown at the end of training
    } sample;
    struct Run {
        std::string dir;  // empty: runs/<config file's name>
    } run;
};

// One key of the schema, for documentation and tools.
struct ConfigKey {
    std::string name;  // "optim.lr"
    std::string type;  // "int", "float", "string", "bool"
    std::string default_value;
    std::string doc;
};
std::vector<ConfigKey> config_keys();

// Reads a TOML file (InputError naming file:line for syntax errors, unknown keys, wrong
// types), then applies "section.key=value" overrides, then validates.
TrainConfig load_config(const std::string& path, const std::vector<std::string>& overrides = {});
// The same from TOML text (`where` names it in errors).
TrainConfig parse_config(const std::string& toml_text, const std::string& where,
                         const std::vector<std::string>& overrides = {});

// The configuration as TOML, every key written out: what the run directory keeps.
std::string config_to_toml(const TrainConfig& c);
// Every key with its value as text, in documentation order: strings as they are, numbers and
// booleans as TOML writes them ("optim.lr" = "0.0006"); what a tracking server records.
std::vector<std::pair<std::string, std::string>> config_values(const TrainConfig& c);

// Range and consistency checks that need no files (InputError naming the key).
void validate_config(const TrainConfig& c);

}  // namespace lmforge
