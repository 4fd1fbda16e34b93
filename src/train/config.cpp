#include "train/config.h"

#include <fmt/format.h>

#include <toml++/toml.h>

#include <algorithm>
#include <cmath>
#include <charconv>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "core/error.h"
#include "model/bert_config.h"
#include "model/llama_config.h"
#include "model/lora.h"
#include "tokenizer/unicode.h"
#include "train/time_budget.h"

namespace lmforge {

namespace {

// Calls v(name, field, doc) for every key, in documentation order.
template <class V>
void visit_config(TrainConfig& c, V&& v) {
    v("model.preset", c.model.preset, "the architecture and size: GPT-2's gpt2, gpt2-medium, gpt2-large, gpt2-xl, gpt2-mini, gpt2-micro, gpt2-nano, a Llama's smollm2-135m, smollm2-360m, tinyllama-1.1b, llama-3.2-1b (llama-1b), llama-micro, llama-nano, or a BERT encoder's bert-tiny, bert-mini, bert-small, bert-medium, bert-base, bert-large, distilbert-base (for classify and mlm); the keys below override it");
    v("model.n_layer", c.model.n_layer, "transformer blocks; 0: the preset's");
    v("model.n_head", c.model.n_head, "attention heads; 0: the preset's");
    v("model.n_embd", c.model.n_embd, "width C (BERT: hidden, with the feed-forward 4 C); 0: the preset's");
    v("model.n_kv_head", c.model.n_kv_head, "Llama: key/value heads, dividing n_head (grouped-query attention); 0: the preset's, in the same proportion to n_head");
    v("model.intermediate", c.model.intermediate, "Llama: the SwiGLU MLP's width; 0: the preset's, in the same proportion to n_embd");
    v("model.block_size", c.model.block_size, "longest sequence (rows of the position table; BERT: max_position); 0: the preset's, raised to train.seq_len");
    v("model.vocab_size", c.model.vocab_size, "vocabulary; 0: the data's tokenizer's");
    v("model.init_from", c.model.init_from, "a checkpoint directory whose weights start the run (optimizer state is not taken)");
    v("data.dir", c.data.dir, "directory of token shards from lmforge prepare (required)");
    v("data.tokenizer", c.data.tokenizer, "tokenizer for samples: gpt2 or a path; empty: the one saved beside the shards");
    v("data.shuffle", c.data.shuffle, "visit shards and windows in a seeded random order each epoch");
    v("train.batch_size", c.train.batch_size, "micro-batch B: sequences per forward/backward, per process");
    v("train.seq_len", c.train.seq_len, "sequence length T");
    v("train.total_batch_tokens", c.train.total_batch_tokens, "tokens per optimizer step over all processes; a multiple of B·T·processes (the quotient is the gradient accumulation); 0: B·T·processes");
    v("train.max_steps", c.train.max_steps, "optimizer steps of an lm or mlm run (classify and sft train for train.epochs)");
    v("train.time_budget", c.train.time_budget, "minutes an lm or mlm run may train: after its first 10 steps (and the step-0 evaluation and samples) have measured the speed, the run takes as many steps as fit, at most train.max_steps, and keeps that length on resume; 0: off");
    v("train.seed", c.train.seed, "seed of the weights' initialisation and of the data order");
    v("train.threads", c.train.threads, "threads per process, at most 4 per core it may run on; 0: its cores, divided among the processes that share them");
    v("train.task", c.train.task, "lm: language modelling on token shards; classify: sequence classification on labelled examples (prepare --label-field), epoch by epoch, with a test report; mlm: masked-LM pretraining of a BERT or DistilBERT model (model.preset bert-*, distilbert-*) on token shards; sft: instruction (generative) fine-tuning of a GPT-2 model on prepare --instructions data, loss on response tokens only, epoch by epoch; distill: a student (model.*) learns from a teacher checkpoint (distill.teacher) by language modelling (GPT-2) or masked LM (BERT, DistilBERT) on token shards");
    v("train.epochs", c.train.epochs, "classify, sft: passes over the training split, each its examples over the global batch in steps, rounded up (train.max_steps and seq_len are not used)");
    v("train.recompute", c.train.recompute, "activation recompute: none; gelu (GELU and layernorm outputs recomputed in backward: one elementwise pass each); block (each block re-runs its forward in backward, keeping only its output)");
    v("train.grads", c.train.grads, "gradient storage: fp32; bf16 (with train.precision bf16: half their memory; each block's gradients are summed in fp32 and rounded once as stored, and summed over processes in bf16; not with LoRA, whose adapters keep fp32 ones)");
    v("train.precision", c.train.precision, "fp32; bf16 (mixed: bf16 GEMM inputs and saved GEMM outputs, fp32 accumulation, master weights and moments); fp16 (mixed: fp16 GEMM inputs converted with F16C, fp32 accumulation, master weights and moments, dynamic loss scaling); auto: bf16 where the CPU has AVX512_BF16");
    v("train.loss_scale", c.train.loss_scale, "fp16: the initial loss scale (halved and the step skipped on an inf or NaN gradient, doubled after 2000 clean steps)");
    v("optim.lr", c.optim.lr, "peak learning rate");
    v("optim.min_lr_ratio", c.optim.min_lr_ratio, "final learning rate as a fraction of the peak (cosine, linear)");
    v("optim.warmup_steps", c.optim.warmup_steps, "linear warm-up: lr · (step + 1) / warmup_steps");
    v("optim.weight_decay", c.optim.weight_decay, "AdamW decoupled weight decay, on matrices only");
    v("optim.grad_clip", c.optim.grad_clip, "clip the global gradient norm to this; 0: no clipping");
    v("optim.schedule", c.optim.schedule, "after warm-up: cosine, linear (both down to min_lr_ratio) or constant");
    v("optim.beta1", c.optim.beta1, "AdamW β1");
    v("optim.beta2", c.optim.beta2, "AdamW β2");
    v("optim.eps", c.optim.eps, "AdamW ε");
    v("optim.zero_stage", c.optim.zero_stage, "0: every process keeps all of Adam's moments; 1: each keeps its shard (ZeRO-1: reduce-scatter gradients, update the shard, all-gather parameters)");
    v("optim.moments", c.optim.moments, "precision of Adam's moments: fp32; bf16 (half their memory, 4 bytes per parameter less, rounded stochastically so small updates still count on average)");
    v("distill.teacher", c.distill.teacher, "distill: the teacher's checkpoint directory (model.safetensors; GPT-2 for a GPT-2 student, BERT or DistilBERT for an encoder), of the student's vocabulary; it runs forward only, in bf16 where the CPU has AVX512_BF16");
    v("distill.temperature", c.distill.temperature, "distill: temperature T that softens the teacher's and the student's distributions");
    v("distill.kl_weight", c.distill.kl_weight, "distill: weight of T² · KL(teacher ‖ student) at the counted targets");
    v("distill.task_weight", c.distill.task_weight, "distill: weight of the task's own loss (next-token or masked-token cross-entropy)");
    v("distill.cosine_weight", c.distill.cosine_weight, "distill: weight of 1 − cos between the student's and the teacher's final hidden states at the counted targets (DistilBERT's cosine loss; needs equal widths); 0: off");
    v("lora.rank", c.lora.rank, "LoRA (a Llama model.preset): the adapters' rank; they train over model.init_from, whose weights stay frozen (bf16 only in mixed precision: no fp32 copy, gradient or moments); 0: off, every weight trains");
    v("lora.alpha", c.lora.alpha, "LoRA: the adapters' output is scaled by alpha / rank");
    v("lora.dropout", c.lora.dropout, "LoRA: dropout on each adapter's input, in training passes, its masks drawn from train.seed, the step and the row (a resume draws the same)");
    v("lora.targets", c.lora.targets, "LoRA: the projections that get adapters, of q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj");
    v("dist.bucket_mb", c.dist.bucket_mb, "size of the gradient buckets all-reduced while backward runs (processes > 1, zero_stage 0)");
    v("dist.overlap", c.dist.overlap, "all-reduce buckets during backward, overlapping computation; false: all at once after it");
    v("eval.every", c.eval.every, "steps between validation evaluations (from step 0, and at the end); 0: only at the end; classify and sft also evaluate at each epoch's end");
    v("eval.batches", c.eval.batches, "validation batches per evaluation, each of processes x batch_size sequences (kept by a resume on other processes); classify and sft evaluate their whole validation split");
    v("eval.metric", c.eval.metric, "classify: the validation metric that picks best/: macro_f1, accuracy or loss (a tie goes to the lower loss); other tasks: the validation loss");
    v("eval.multiple_choice", c.eval.multiple_choice, "lm: multiple-choice items in HellaSwag's JSONL format (ctx, endings, label), read with the run's tokenizer at the start (a bad line stops the run there); their accuracy and length-normalised accuracy, as lmforge eval --multiple-choice gives them, go to metrics.jsonl (mc_accuracy, mc_accuracy_norm, with the counts), TensorBoard and the plot; empty: none");
    v("eval.multiple_choice_every", c.eval.multiple_choice_every, "steps between multiple-choice evaluations (from step 0, and at the end); 0: eval.every's (with eval.every = 0 too: only at the end)");
    v("checkpoint.every", c.checkpoint.every, "steps between checkpoints; 0: only at the end; classify and sft also checkpoint at each epoch's end");
    v("checkpoint.keep_last", c.checkpoint.keep_last, "checkpoints kept besides best/ (one more while the next is written; best/ is a full copy when it falls between checkpoints)");
    v("log.every", c.log.every, "steps between log lines");
    v("log.tensorboard", c.log.tensorboard, "write TensorBoard event files");
    v("log.plots", c.log.plots, "draw loss curves (SVG and PNG) at the end");
    v("log.peak_gflops", c.log.peak_gflops, "the machine's peak GFLOP/s, for the model FLOP utilisation (MFU) in the log; 0: measured at the start (fp32 FMAs; for bf16, AMX tile products where the GEMMs run on tiles, else bf16 dot products where the CPU has them)");
    v("log.mlflow_uri", c.log.mlflow_uri, "an MLflow tracking server, http:// or https:// (e.g. http://127.0.0.1:5000), that the run logs to: the resolved configuration as params, tags (host, version, commit, task, processes), every metric of metrics.jsonl, the plots and config.toml as artifacts (mlflow server --serve-artifacts) and the end's status; a resumed run continues its MLflow run; a server that is down or refuses costs a warning, never the run; empty: none");
    v("log.mlflow_experiment", c.log.mlflow_experiment, "the MLflow experiment the run belongs to, created if missing");
    v("log.run_name", c.log.run_name, "the run's name in MLflow; empty: the run directory's name");
    v("sample.every", c.sample.every, "steps between samples printed during training; 0: none");
    v("sample.tokens", c.sample.tokens, "tokens per sample");
    v("sample.prompt", c.sample.prompt, "text the samples continue; empty: start of a document");
    v("sample.temperature", c.sample.temperature, "sampling temperature; 0: greedy");
    v("sample.top_k", c.sample.top_k, "sample among the k likeliest tokens; 0: all");
    v("sample.seed", c.sample.seed, "seed of the sampling RNG (separate from training's)");
    v("sample.count", c.sample.count, "samples printed at the end of training");
    v("run.dir", c.run.dir, "run directory; empty: runs/<the config file's name>");
}

template <class T>
const char* type_name() {
    if constexpr (std::is_same_v<T, int64_t>) return "int";
    if constexpr (std::is_same_v<T, double>) return "float";
    if constexpr (std::is_same_v<T, bool>) return "bool";
    return "string";
}

std::string show(const int64_t& v) { return std::to_string(v); }
std::string show(const double& v) {
    std::string s = fmt::format("{}", v);
    if (s.find_first_of(".eEn") == std::string::npos) s += ".0";  // a TOML float
    return s;
}
std::string show(const bool& v) { return v ? "true" : "false"; }
std::string show(const std::string& v) {  // a TOML basic string
    std::string out = "\"";
    for (const char ch : v) {
        const auto c = static_cast<unsigned char>(ch);
        if (c == '"' || c == '\\') {
            out += '\\';
            out += ch;
        } else if (c == '\n') {
            out += "\\n";
        } else if (c == '\t') {
            out += "\\t";
        } else if (c < 0x20 || c == 0x7f) {
            out += fmt::format("\\u{:04X}", c);
        } else {
            out += ch;
        }
    }
    return out + "\"";
}

size_t edit_distance(const std::string& a, const std::string& b) {
    std::vector<size_t> row(b.size() + 1);
    for (size_t j = 0; j <= b.size(); j++) row[j] = j;
    for (size_t i = 1; i <= a.size(); i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= b.size(); j++) {
            const size_t up = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] != b[j - 1])});
            diag = up;
        }
    }
    return row[b.size()];
}

std::string nearest_key(const std::string& key) {
    std::string best;
    size_t best_d = SIZE_MAX;
    TrainConfig c;
    visit_config(c, [&](const char* name, auto&, const char*) {
        const size_t d = edit_distance(key, name);
        if (d < best_d) best_d = d, best = name;
    });
    return best;
}

InputError unknown_key(const std::string& where, const std::string& key) {
    return InputError(fmt::format("{}: unknown key \"{}\"", where, key),
                      fmt::format("did you mean \"{}\"? docs/config.md lists every key", nearest_key(key)));
}

// Sets field from a TOML node, or throws naming where, key and the expected type.
template <class T>
void assign(T& field, const toml::node& node, const std::string& where, const std::string& key) {
    const auto bad = [&] {
        std::ostringstream shown;  // strings as the user wrote them, in double quotes
        if (const auto* str = node.as_string()) {
            shown << show(str->get());
        } else {
            node.visit([&](const auto& concrete) { shown << concrete; });
        }
        return InputError(fmt::format("{}: {} = {} must be {} {}", where, key, shown.str(),
                                      std::is_same_v<T, int64_t> ? "an" : "a",
                                      std::is_same_v<T, int64_t> ? "integer" : std::is_same_v<T, double> ? "number"
                                      : std::is_same_v<T, bool> ? "boolean (true or false)" : "string"),
                          "see docs/config.md");
    };
    if constexpr (std::is_same_v<T, double>) {
        if (auto v = node.value_exact<double>()) {
            field = *v;
        } else if (auto i = node.value_exact<int64_t>()) {
            field = static_cast<double>(*i);
        } else {
            throw bad();
        }
    } else {
        auto v = node.value_exact<T>();
        if (!v) throw bad();
        field = *v;
    }
}

// Text as ASCII, other bytes as \xNN: a value that is not UTF-8, shown in a message.
std::string escaped(const std::string& text) {
    std::string out;
    for (const char ch : text) {
        const auto c = static_cast<unsigned char>(ch);
        out += c >= 0x20 && c < 0x7f ? std::string(1, ch) : fmt::format("\\x{:02x}", c);
    }
    return out;
}

// A --set string must be UTF-8: TOML holds nothing else, and the run keeps its configuration
// as TOML (config.toml), which must parse back. (A file's strings the TOML parser checks.)
void require_utf8(const std::string& text, const std::string& key) {
    const auto* begin = reinterpret_cast<const unsigned char*>(text.data());
    const auto* end = begin + text.size();
    for (const unsigned char* p = begin; p < end;) {
        uint32_t cp;
        const int len = utf8_decode(p, end, cp);
        if (cp == kInvalidCodePoint) {
            throw InputError(fmt::format("--set {}={}: not UTF-8 (byte {})", key, escaped(text), p - begin),
                             "TOML, and so the run's config.toml, holds UTF-8 text only");
        }
        p += len;
    }
}

// Parses one --set value by the key's type.
template <class T>
void assign_text(T& field, const std::string& text, const std::string& key) {
    const auto bad = [&](const char* what) {
        return InputError(fmt::format("--set {}={}: expected {}", key, text, what), "see docs/config.md");
    };
    if constexpr (std::is_same_v<T, std::string>) {
        require_utf8(text, key);
        field = text;
    } else if constexpr (std::is_same_v<T, bool>) {
        if (text == "true") field = true;
        else if (text == "false") field = false;
        else throw bad("true or false");
    } else if constexpr (std::is_same_v<T, int64_t>) {
        int64_t v = 0;
        const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
        if (ec != std::errc() || p != text.data() + text.size()) throw bad("an integer");
        field = v;
    } else {
        double v = 0;
        const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
        if (ec != std::errc() || p != text.data() + text.size()) throw bad("a number");
        field = v;
    }
}

void require(bool ok, const std::string& key, const std::string& value, const std::string& what) {
    if (!ok) throw InputError(fmt::format("{} = {} {}", key, value, what), "see docs/config.md");
}

}  // namespace

std::vector<ConfigKey> config_keys() {
    std::vector<ConfigKey> keys;
    TrainConfig c;
    visit_config(c, [&](const char* name, auto& field, const char* doc) {
        keys.push_back({name, type_name<std::decay_t<decltype(field)>>(), show(field), doc});
    });
    return keys;
}

TrainConfig parse_config(const std::string& toml_text, const std::string& where,
                         const std::vector<std::string>& overrides) {
    toml::table table;
    try {
        table = toml::parse(toml_text, where);
    } catch (const toml::parse_error& e) {
        throw InputError(fmt::format("{}:{}:{}: {}", where, e.source().begin.line, e.source().begin.column,
                                     e.description()),
                         "the file is not valid TOML");
    }
    TrainConfig c;
    std::set<std::string> known;
    visit_config(c, [&](const char* name, auto&, const char*) { known.insert(name); });
    // Every key in the file must be known: a typo must not silently keep a default.
    for (const auto& [section, node] : table) {
        const std::string s(section.str());
        const toml::table* t = node.as_table();
        if (t == nullptr) throw unknown_key(where, s);
        for (const auto& [key, value] : *t) {
            const std::string full = s + "." + std::string(key.str());
            if (known.count(full) == 0) {
                throw unknown_key(fmt::format("{}:{}", where, value.source().begin.line), full);
            }
        }
    }
    visit_config(c, [&](const char* name, auto& field, const char*) {
        const std::string n(name);
        const size_t dot = n.find('.');
        const toml::node* node = table[n.substr(0, dot)][n.substr(dot + 1)].node();
        if (node != nullptr) assign(field, *node, fmt::format("{}:{}", where, node->source().begin.line), n);
    });
    for (const std::string& o : overrides) {
        const size_t eq = o.find('=');
        if (eq == std::string::npos) {
            throw InputError(fmt::format("--set {}: expected section.key=value", o), "e.g. --set optim.lr=3e-4");
        }
        const std::string key = o.substr(0, eq), value = o.substr(eq + 1);
        if (known.count(key) == 0) throw unknown_key("--set", key);
        visit_config(c, [&](const char* name, auto& field, const char*) {
            if (key == name) assign_text(field, value, key);
        });
    }
    validate_config(c);
    return c;
}

TrainConfig load_config(const std::string& path, const std::vector<std::string>& overrides) {
    std::ifstream in(path);
    if (!in) throw InputError(fmt::format("{}: cannot read the config file", path), "check the path");
    std::stringstream text;
    text << in.rdbuf();
    return parse_config(text.str(), path, overrides);
}

std::string config_to_toml(const TrainConfig& config) {
    TrainConfig c = config;
    std::string out, section;
    visit_config(c, [&](const char* name, auto& field, const char* doc) {
        const std::string n(name);
        const std::string s = n.substr(0, n.find('.'));
        if (s != section) {
            out += (section.empty() ? "" : "\n") + fmt::format("[{}]\n", s);
            section = s;
        }
        out += fmt::format("{} = {}  # {}\n", n.substr(n.find('.') + 1), show(field), doc);
    });
    return out;
}

std::vector<std::pair<std::string, std::string>> config_values(const TrainConfig& config) {
    TrainConfig c = config;
    std::vector<std::pair<std::string, std::string>> values;
    visit_config(c, [&](const char* name, auto& field, const char*) {
        if constexpr (std::is_same_v<std::decay_t<decltype(field)>, std::string>) {
            values.emplace_back(name, field);
        } else {
            values.emplace_back(name, show(field));
        }
    });
    return values;
}

namespace {

// The steps that measure the speed must run before the schedule's length matters: in warm-up.
void validate_time_budget(const TrainConfig& c) {
    const double b = c.train.time_budget;
    require(b >= 0, "train.time_budget", show(b), "must not be negative (0: off)");
    if (b == 0) return;
    require(c.train.task == "lm" || c.train.task == "mlm" || c.train.task == "distill", "train.time_budget", show(b),
            "is for lm, mlm and distill runs: classify and sft train for train.epochs");
    require(c.optim.warmup_steps >= kBudgetCalibrationSteps, "optim.warmup_steps", std::to_string(c.optim.warmup_steps),
            fmt::format("must be at least {} with train.time_budget: the steps that measure the speed come before the "
                        "run's length is known",
                        kBudgetCalibrationSteps));
}

// Only a web address reaches a tracking server over its REST API; a typo of the scheme is
// caught here rather than as a server that never answers.
void validate_mlflow(const TrainConfig& c) {
    const std::string& uri = c.log.mlflow_uri;
    if (uri.empty()) return;
    const bool web =
        (uri.rfind("http://", 0) == 0 && uri.size() > 7) || (uri.rfind("https://", 0) == 0 && uri.size() > 8);
    require(web, "log.mlflow_uri", show(uri),
            "must be a tracking server's web address, http://HOST:PORT or https://HOST (a local mlruns directory "
            "is not written: start mlflow server on it)");
    require(!c.log.mlflow_experiment.empty(), "log.mlflow_experiment", "\"\"", "must name an experiment");
}

// A temperature and weights that give a loss, and a teacher where there is to be one.
void validate_distill(const TrainConfig& c) {
    const auto& d = c.distill;
    require(d.temperature > 0 && std::isfinite(d.temperature), "distill.temperature", show(d.temperature),
            "must be a positive number");
    require(d.kl_weight >= 0 && std::isfinite(d.kl_weight), "distill.kl_weight", show(d.kl_weight),
            "must not be negative");
    require(d.task_weight >= 0 && std::isfinite(d.task_weight), "distill.task_weight", show(d.task_weight),
            "must not be negative");
    require(d.cosine_weight >= 0 && std::isfinite(d.cosine_weight), "distill.cosine_weight", show(d.cosine_weight),
            "must not be negative");
    require(d.kl_weight + d.task_weight + d.cosine_weight > 0, "distill.kl_weight", show(d.kl_weight),
            "distill.task_weight and distill.cosine_weight are all 0: nothing to learn from");
    if (c.train.task == "distill") {
        require(!d.teacher.empty(), "distill.teacher", "\"\"", "must name the teacher's checkpoint directory");
    }
}

// LoRA adapts a Llama's projections over a base it must be given; a classifier's head trains
// whole beside them.
void validate_lora(const TrainConfig& c) {
    const auto& l = c.lora;
    if (l.rank == 0) return;
    require(l.rank > 0, "lora.rank", show(l.rank), "must be positive, or 0 (off)");
    require(LlamaConfig::is_preset(c.model.preset), "lora.rank", show(l.rank),
            fmt::format("needs a Llama model.preset, not {}", show(c.model.preset)));
    require(!c.model.init_from.empty(), "lora.rank", show(l.rank),
            "needs model.init_from: the checkpoint whose weights the adapters train over");
    require(c.train.task == "lm" || c.train.task == "sft" || c.train.task == "classify", "lora.rank", show(l.rank),
            fmt::format("is for train.task lm, sft or classify, not {}", show(c.train.task)));
    require(l.alpha > 0 && std::isfinite(l.alpha), "lora.alpha", show(l.alpha), "must be a positive number");
    require(l.dropout >= 0 && l.dropout < 1, "lora.dropout", show(l.dropout), "must lie in [0, 1)");
    LoraOptions::parse_targets(l.targets);
}

// Multiple-choice items are scored by a language model's likelihood of each ending: a GPT-2
// model trained by lm (classify's head and sft's data are other things, an encoder sees both
// sides).
void validate_multiple_choice(const TrainConfig& c) {
    if (c.eval.multiple_choice.empty()) return;
    require(c.train.task == "lm", "eval.multiple_choice", show(c.eval.multiple_choice),
            fmt::format("is for train.task = \"lm\", not {}", show(c.train.task)));
    require(!BertConfig::is_preset(c.model.preset), "eval.multiple_choice", show(c.eval.multiple_choice),
            fmt::format("needs a GPT-2 model, not the encoder model.preset = {}", show(c.model.preset)));
}

// Counts, sizes and intervals: not negative, or positive; every floating-point key finite in
// single precision, where the training computes; the signs of the numbers outside the optimizer.
void validate_numbers(const TrainConfig& c) {
    const auto positive = [](const char* key, int64_t v) { require(v > 0, key, std::to_string(v), "must be positive"); };
    const auto non_negative = [](const char* key, int64_t v) {
        require(v >= 0, key, std::to_string(v), "must not be negative");
    };
    for (const auto& [key, v] : {std::pair{"model.n_layer", c.model.n_layer}, {"model.n_head", c.model.n_head},
                                 {"model.n_embd", c.model.n_embd}, {"model.block_size", c.model.block_size},
                                 {"model.n_kv_head", c.model.n_kv_head}, {"model.intermediate", c.model.intermediate},
                                 {"model.vocab_size", c.model.vocab_size}, {"train.total_batch_tokens", c.train.total_batch_tokens},
                                 {"train.threads", c.train.threads}, {"optim.warmup_steps", c.optim.warmup_steps},
                                 {"eval.every", c.eval.every},
                                 {"eval.multiple_choice_every", c.eval.multiple_choice_every},
                                 {"checkpoint.every", c.checkpoint.every},
                                 {"sample.every", c.sample.every}, {"sample.top_k", c.sample.top_k},
                                 {"sample.count", c.sample.count}}) {
        non_negative(key, v);
    }
    for (const auto& [key, v] : {std::pair{"train.batch_size", c.train.batch_size}, {"train.seq_len", c.train.seq_len},
                                 {"train.max_steps", c.train.max_steps}, {"eval.batches", c.eval.batches},
                                 {"checkpoint.keep_last", c.checkpoint.keep_last}, {"log.every", c.log.every},
                                 {"sample.tokens", c.sample.tokens}, {"train.epochs", c.train.epochs}}) {
        positive(key, v);
    }
    for (const auto& [key, v] : {std::pair{"optim.lr", c.optim.lr}, {"optim.min_lr_ratio", c.optim.min_lr_ratio},
                                 {"optim.weight_decay", c.optim.weight_decay}, {"optim.grad_clip", c.optim.grad_clip},
                                 {"optim.beta1", c.optim.beta1}, {"optim.beta2", c.optim.beta2}, {"optim.eps", c.optim.eps},
                                 {"dist.bucket_mb", c.dist.bucket_mb}, {"log.peak_gflops", c.log.peak_gflops},
                                 {"train.time_budget", c.train.time_budget},
                                 {"sample.temperature", c.sample.temperature}}) {
        require(std::isfinite(v) && std::abs(v) <= std::numeric_limits<float>::max(), key, show(v),
                "must be a finite number in single precision");
    }
    require(c.dist.bucket_mb > 0, "dist.bucket_mb", show(c.dist.bucket_mb), "must be positive");
    require(c.log.peak_gflops >= 0, "log.peak_gflops", show(c.log.peak_gflops), "must be positive (or 0: by precision)");
    require(c.sample.temperature >= 0, "sample.temperature", show(c.sample.temperature), "must not be negative");
    require(c.train.loss_scale > 0 && std::isfinite(c.train.loss_scale), "train.loss_scale", show(c.train.loss_scale),
            "must be a positive number");
}

void validate_optimizer(const TrainConfig& c) {
    require(c.optim.lr > 0, "optim.lr", show(c.optim.lr), "must be positive");
    require(c.optim.min_lr_ratio >= 0 && c.optim.min_lr_ratio <= 1, "optim.min_lr_ratio", show(c.optim.min_lr_ratio),
            "must lie in [0, 1]");
    require(c.optim.weight_decay >= 0, "optim.weight_decay", show(c.optim.weight_decay), "must not be negative");
    require(c.optim.grad_clip >= 0, "optim.grad_clip", show(c.optim.grad_clip), "must not be negative");
    require(c.optim.beta1 >= 0 && c.optim.beta1 < 1, "optim.beta1", show(c.optim.beta1), "must lie in [0, 1)");
    require(c.optim.beta2 >= 0 && c.optim.beta2 < 1, "optim.beta2", show(c.optim.beta2), "must lie in [0, 1)");
    require(c.optim.eps > 0, "optim.eps", show(c.optim.eps), "must be positive");
    // AdamW computes in single precision: a beta that rounds to 1 there makes the bias
    // correction 0 (beta2 = 0.99999999), an eps that rounds to 0 divides by zero.
    for (const auto& [key, v] : {std::pair{"optim.beta1", c.optim.beta1}, {"optim.beta2", c.optim.beta2}}) {
        require(static_cast<float>(v) < 1.0f, key, show(v), "rounds to 1 in single precision: use at most 0.9999999");
    }
    require(static_cast<float>(c.optim.eps) > 0.0f, "optim.eps", show(c.optim.eps),
            "rounds to 0 in single precision: use at least 1e-38");
    require(c.optim.zero_stage == 0 || c.optim.zero_stage == 1, "optim.zero_stage", show(c.optim.zero_stage),
            "must be 0 or 1");
}

// Keys that take one of a few names.
void validate_choices(const TrainConfig& c) {
    const std::string& s = c.optim.schedule;
    require(s == "cosine" || s == "linear" || s == "constant", "optim.schedule", show(s),
            "must be cosine, linear or constant");
    const std::string& p = c.train.precision;
    require(p == "fp32" || p == "bf16" || p == "fp16" || p == "auto", "train.precision", show(p),
            "must be fp32, bf16, fp16 or auto");
    require(c.optim.moments == "fp32" || c.optim.moments == "bf16", "optim.moments", show(c.optim.moments),
            "must be fp32 or bf16");
    require(c.train.grads == "fp32" || c.train.grads == "bf16", "train.grads", show(c.train.grads),
            "must be fp32 or bf16");
    const std::string& r = c.train.recompute;
    require(r == "none" || r == "gelu" || r == "block", "train.recompute", show(r), "must be none, gelu or block");
    const std::string& t = c.train.task;
    require(t == "lm" || t == "classify" || t == "mlm" || t == "sft" || t == "distill", "train.task", show(t),
            "must be lm, classify, mlm, sft or distill");
    const std::string& m = c.eval.metric;
    require(m == "macro_f1" || m == "accuracy" || m == "loss", "eval.metric", show(m),
            "must be macro_f1, accuracy or loss");
}

}  // namespace

void validate_config(const TrainConfig& c) {
    require(!c.data.dir.empty(), "data.dir", "\"\"", "must name the directory of token shards");
    validate_numbers(c);
    validate_optimizer(c);
    validate_choices(c);
    validate_time_budget(c);
    validate_distill(c);
    validate_lora(c);
    validate_multiple_choice(c);
    validate_mlflow(c);
}

}  // namespace lmforge
