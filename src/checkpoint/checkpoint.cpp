#include "checkpoint/checkpoint.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstring>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/file_io.h"
#include "io/json_fields.h"
#include "io/safetensors.h"
#include "core/bf16.h"

namespace lmforge {

using json = nlohmann::json;

namespace {

// The metadata entry lmforge_config of a model.safetensors, parsed.
json model_metadata(const std::string& path) {
    const SafetensorsReader file(path);
    const auto it = file.metadata().find("lmforge_config");
    if (it == file.metadata().end()) {
        throw InputError(fmt::format("{}: no lmforge_config in the metadata", path),
                         "it was not written by lmforge; import Hugging Face weights with lmforge import");
    }
    const json j = json::parse(it->second, json_depth_limit(path), false);
    if (!j.is_object()) throw InputError(fmt::format("{}: bad lmforge_config", path));
    return j;
}

// The architecture lmforge_config names: "gpt2" where it names none (checkpoints from before
// BERT); InputError where "arch" is no string, which value() would throw as nlohmann's error.
std::string model_arch(const json& j, const std::string& path) {
    const auto it = j.find("arch");
    if (it == j.end()) return "gpt2";
    if (!it->is_string()) {
        throw InputError(fmt::format("{}: lmforge_config's \"arch\" is {}, not a string", path, it->dump()),
                         "the checkpoint is damaged; use another");
    }
    return it->get<std::string>();
}

// The tensor prefix + s.name of `file`, its name and shape checked.
const TensorInfo& checked_info(const SafetensorsReader& file, const ParamSpec& s, const std::string& prefix) {
    const std::string name = prefix + s.name;
    if (!file.contains(name)) {
        throw InputError(fmt::format("{}: no tensor '{}'", file.path(), name),
                         "the checkpoint is of another model, or damaged");
    }
    const TensorInfo& t = file.info(name);
    if (t.shape != s.shape) {
        throw InputError(fmt::format("{}: tensor '{}' has shape [{}], this model needs [{}]", file.path(), name,
                                     fmt::join(t.shape, ", "), fmt::join(s.shape, ", ")),
                         "the checkpoint is of another model shape; check model.* in the config");
    }
    return t;
}

// Reads the tensor `s` from `file` under prefix + name into `dst` at its offset, checking its
// name and shape first. Weights stored in F16 or BF16 (an export's) are widened.
void read_tensor(const SafetensorsReader& file, const ParamSpec& s, const std::string& prefix, float* dst) {
    checked_info(file, s, prefix);
    file.read_float(prefix + s.name, std::span<float>(dst + s.offset, static_cast<size_t>(s.numel)));
    std::fill(dst + s.offset + s.numel, dst + s.offset + s.reserved, 0.0f);  // padding rows
}

// The elements [lo, hi) of the layout, which lie in the moment tensor `s`, into fp32 or bf16
// storage at `f32`/`b16` (one of them null), whichever precision the file holds: a run may
// resume in the other moment precision (to bf16: rounded to nearest). The padding rows past
// the tensor's elements are zero.
void read_moment(const SafetensorsReader& file, const ParamSpec& s, const std::string& prefix, int64_t lo,
                 int64_t hi, float* f32, bf16* b16) {
    const TensorInfo& t = checked_info(file, s, prefix);
    if (t.dtype != Dtype::F32 && t.dtype != Dtype::BF16) {
        throw InputError(fmt::format("{}: moment '{}{}' is {}, not F32 or BF16", file.path(), prefix, s.name,
                                     dtype_name(t.dtype)),
                         "the checkpoint is damaged");
    }
    const int64_t stored_end = std::max(lo, std::min(hi, s.offset + s.numel));  // past it: padding
    const auto n = static_cast<size_t>(stored_end - lo);
    if (n > 0) {
        // The file's bytes may be unaligned for their type: memcpy, not casts.
        const std::byte* from =
            file.raw(prefix + s.name).data() + static_cast<size_t>(lo - s.offset) * dtype_size(t.dtype);
        if (t.dtype == Dtype::F32 && f32 != nullptr) {
            std::memcpy(f32, from, n * sizeof(float));
        } else if (t.dtype == Dtype::BF16 && b16 != nullptr) {
            std::memcpy(b16, from, n * sizeof(bf16));
        } else if (t.dtype == Dtype::F32) {
            for (size_t i = 0; i < n; i++) {
                float x;
                std::memcpy(&x, from + i * sizeof x, sizeof x);
                b16[i] = to_bf16(x);
            }
        } else {
            for (size_t i = 0; i < n; i++) {
                bf16 x;
                std::memcpy(&x, from + i * sizeof x, sizeof x);
                f32[i] = from_bf16(x);
            }
        }
    }
    const int64_t padding_from = stored_end - lo;
    if (f32 != nullptr) std::fill(f32 + padding_from, f32 + (hi - lo), 0.0f);
    if (b16 != nullptr) std::fill(b16 + padding_from, b16 + (hi - lo), bf16{0});
}

// Adam's moments of tensor s, the layout's elements [lo, hi) (the spans start at element
// `first`), as AdamW leaves them: m finite, v finite and not negative (a negative v makes the
// update's square root NaN). An InputError names the file, tensor and value otherwise.
void check_moments(const MomentSpans& mv, const ParamSpec& s, int64_t first, int64_t lo, int64_t hi,
                   const std::string& path) {
    const bool wide = mv.precision == MomentPrecision::F32;
    for (int64_t i = lo - first; i < hi - first; i++) {
        const float m = wide ? mv.m[i] : from_bf16(mv.m_bf16[i]), v = wide ? mv.v[i] : from_bf16(mv.v_bf16[i]);
        if (std::isfinite(m) && std::isfinite(v) && v >= 0) continue;
        const bool bad_m = !std::isfinite(m);
        throw InputError(fmt::format("{}: moment {}/{} holds {} at element {}, which AdamW never leaves there", path,
                                     bad_m ? "m" : "v", s.name, bad_m ? m : v, i + first - s.offset),
                         "the checkpoint is damaged: resume from another one");
    }
}

// Every tensor of the layout.
void read_tensors(const SafetensorsReader& file, const ParamLayout& layout, const std::string& prefix, float* dst) {
    for (const ParamSpec& s : layout.specs()) read_tensor(file, s, prefix, dst);
}

}  // namespace

void save_model_weights(const Model& model, const std::string& path) {
    SafetensorsWriter w;
    for (const ParamSpec& s : model.layout().specs()) {
        w.add_view(s.name, Dtype::F32, s.shape, model.params().data() + s.offset);
    }
    w.add_metadata("format", "pt");
    w.add_metadata("lmforge_config", model.config_json());
    w.write(path);
}

json read_model_json(const std::string& path) { return model_metadata(path); }

std::string read_model_arch(const std::string& path) { return model_arch(model_metadata(path), path); }

Gpt2Config read_model_config(const std::string& path) {
    const json j = model_metadata(path);
    if (const std::string arch = model_arch(j, path); arch != "gpt2") {
        throw InputError(fmt::format("{}: a {} model, not GPT-2", path, arch), "this command runs GPT-2 models only");
    }
    return Gpt2Config::from_json(j.dump(), path);
}

BertConfig read_bert_config(const std::string& path) {
    const json j = model_metadata(path);
    if (const std::string arch = model_arch(j, path); !is_bert_family(arch)) {
        throw InputError(fmt::format("{}: a {} model, not BERT or DistilBERT", path, arch));
    }
    return BertConfig::from_json(j.dump(), path);
}

LlamaConfig read_llama_config(const std::string& path) {
    const json j = model_metadata(path);
    if (const std::string arch = model_arch(j, path); arch != "llama") {
        throw InputError(fmt::format("{}: a {} model, not Llama", path, arch));
    }
    return LlamaConfig::from_json(j.dump(), path);
}

std::vector<std::string> load_matching_weights(Model& model, const std::string& path) {
    const SafetensorsReader file(path);
    std::vector<std::string> missing;
    for (const ParamSpec& s : model.layout().specs()) {
        if (!file.contains(s.name)) {
            missing.push_back(s.name);
            continue;
        }
        // A classifier's head for another number of classes: the new task's own, started anew.
        // (By name: BERT's token-type table also has 2 rows, and another shape of it is an error.)
        const std::vector<int64_t>& stored = file.info(s.name).shape;
        const bool head = s.name == "score.weight" || s.name == "classifier.weight" || s.name == "classifier.bias";
        if (head && stored.size() == s.shape.size() && stored[0] != s.shape[0] &&
            std::equal(stored.begin() + 1, stored.end(), s.shape.begin() + 1)) {
            missing.push_back(fmt::format("{} (the file's is for {} classes)", s.name, stored[0]));
            continue;
        }
        read_tensor(file, s, "", model.params().data());
    }
    model.weights_changed();
    return missing;
}

void load_model_weights(Model& model, const std::string& path) {
    read_tensors(SafetensorsReader(path), model.layout(), "", model.params().data());
}

namespace {

// A checkpoint's moments must cover the model's whole layout: a view of a shard, or of
// nothing (a ZeRO-1 rank other than root), would be read past its end.
void check_covers_layout(const OptimizerMoments& moments, const Model& model) {
    const size_t n = moments.moments.size();
    if (moments.first != 0 || n != static_cast<size_t>(model.layout().total())) {
        throw Error(fmt::format("checkpoint: {} moments from element {} for a layout of {}", n, moments.first,
                                model.layout().total()));
    }
}

json state_json(const TrainingState& state, int64_t optimizer_steps, const Model& model) {
    const auto finite_or_null = [](double x) { return std::isfinite(x) ? json(x) : json(nullptr); };
    return {{"task", state.task},
            {"step", state.step},
            {"optimizer_steps", optimizer_steps},
            {"data", state.data},
            {"best_metric", finite_or_null(state.best_metric)},
            {"best_loss", finite_or_null(state.best_loss)},
            {"best_step", state.best_step},
            {"epoch_loss",
             {{"sum", state.epoch_loss.sum}, {"count", state.epoch_loss.count}, {"correct", state.epoch_loss.correct}}},
            {"tokens_seen", state.tokens_seen},
            {"train_seconds", state.train_seconds},
            {"global_batch", state.global_batch},
            {"max_steps", state.max_steps},
            {"budget_steps", state.budget_steps},
            {"loss_scale", state.loss_scale},
            {"loss_scale_clean_steps", state.loss_scale_clean_steps},
            {"skipped_steps", state.skipped_steps},
            {"first_samples", state.first_samples},
            {"eval_sequences", state.eval_sequences},
            {"data_fingerprint", state.data_fingerprint},
            {"model", json::parse(model.config_json())}};
}

// A checkpoint of an lmforge before the one trainer: the language-model task, its loader's
// position beside the sampling RNG, the best validation loss, the global batch in tokens.
void read_older_state(const json& j, TrainingState& state, const std::string& path) {
    state.task = "lm";
    state.data = {{"loader", j.at("loader")}, {"sample_rng", j.at("sample_rng")}};
    state.best_loss = state.best_metric = json_number_or(j, "best_val_loss", 0, HUGE_VAL, HUGE_VAL, path);
    state.batch_tokens = j.contains("batch_tokens") ? json_int(j, "batch_tokens", 0, kMaxCount, path) : 0;
}

// Fills state from a state.json (every number checked, io/json_fields.h); returns the
// optimizer's step count.
int64_t read_state(const std::string& path, TrainingState& state) {
    const MappedFile file(path);
    const auto* text = reinterpret_cast<const char*>(file.bytes().data());
    const json j = json::parse(text, text + file.size(), json_depth_limit(path), false);
    if (!j.is_object()) throw InputError(fmt::format("{}: damaged: not a JSON object", path), "resume from another checkpoint");
    try {
        state.step = json_int(j, "step", 0, kMaxCount, path);
        if (!j.contains("task")) {
            read_older_state(j, state, path);
        } else {
            state.task = j.at("task").get<std::string>();
            state.data = j.at("data");
            // Losses are not negative; a metric where higher is better is negated, and lies in [0, 1].
            state.best_metric = json_number_or(j, "best_metric", -1, HUGE_VAL, HUGE_VAL, path);
            state.best_loss = json_number_or(j, "best_loss", 0, HUGE_VAL, HUGE_VAL, path);
            state.best_step = json_int(j, "best_step", -1, state.step, path);
            const json& e = j.at("epoch_loss");
            state.epoch_loss = {json_number(e, "sum", 0, HUGE_VAL, path), json_int(e, "count", 0, kMaxCount, path),
                                json_int(e, "correct", 0, kMaxCount, path)};
            state.global_batch = json_int(j, "global_batch", 0, kMaxCount, path);
            state.eval_sequences = json_int(j, "eval_sequences", 0, kMaxCount, path);
            state.data_fingerprint = j.at("data_fingerprint").get<std::string>();
        }
        state.tokens_seen = json_int(j, "tokens_seen", 0, kMaxCount, path);
        state.train_seconds = json_number(j, "train_seconds", 0, HUGE_VAL, path);
        state.max_steps = j.contains("max_steps") ? json_int(j, "max_steps", 0, kMaxCount, path) : 0;
        state.budget_steps = j.contains("budget_steps") ? json_int(j, "budget_steps", 0, kMaxCount, path) : 0;
        if (j.contains("loss_scale")) {
            state.loss_scale = json_number(j, "loss_scale", 0, HUGE_VAL, path);
            state.loss_scale_clean_steps = json_int(j, "loss_scale_clean_steps", 0, kMaxCount, path);
            state.skipped_steps = json_int(j, "skipped_steps", 0, state.step, path);
        }
        if (j.contains("first_samples")) state.first_samples = j.at("first_samples").get<std::vector<std::string>>();
        return json_int(j, "optimizer_steps", 0, kMaxCount, path);
    } catch (const json::exception& e) {
        throw InputError(fmt::format("{}: damaged: {}", path, e.what()), "resume from another checkpoint");
    }
}

}  // namespace

void save_checkpoint(const std::string& dir, const Model& model, const OptimizerMoments& moments,
                     const TrainingState& state, const CheckpointFiles& files) {
    check_covers_layout(moments, model);
    publish_directory(dir, [&](const std::string& tmp) {
        save_model_weights(model, tmp + "/model.safetensors");
        SafetensorsWriter opt;
        const MomentSpans& mv = moments.moments;
        for (const ParamSpec& s : model.layout().specs()) {
            if (mv.precision == MomentPrecision::F32) {
                opt.add_view("m/" + s.name, Dtype::F32, s.shape, mv.m.data() + s.offset);
                opt.add_view("v/" + s.name, Dtype::F32, s.shape, mv.v.data() + s.offset);
            } else {
                opt.add_view("m/" + s.name, Dtype::BF16, s.shape, mv.m_bf16.data() + s.offset);
                opt.add_view("v/" + s.name, Dtype::BF16, s.shape, mv.v_bf16.data() + s.offset);
            }
        }
        opt.add_metadata("optimizer_steps", std::to_string(moments.steps));
        opt.write(tmp + "/optimizer.safetensors");
        // Fault injection for tests: die half way through the save of this step.
        if (const char* f = std::getenv("LMFORGE_FAULT_KILL_IN_SAVE"); f != nullptr && std::atoll(f) == state.step) {
            std::raise(SIGKILL);
        }
        const json j = state_json(state, moments.steps, model);
        // A sample may end inside a character: its broken bytes are kept as U+FFFD.
        write_text_atomic(tmp + "/state.json", j.dump(2, ' ', false, json::error_handler_t::replace) + "\n");
        for (const auto& [name, content] : files) write_text_atomic(tmp + "/" + name, content);
    });
}

TrainingState read_training_state(const std::string& dir) {
    TrainingState state;
    read_state(dir + "/state.json", state);
    return state;
}

void load_checkpoint(const std::string& dir, Model& model, OptimizerMoments& moments, TrainingState& state) {
    const MomentSpans& mv = moments.moments;
    const int64_t first = moments.first, end = first + static_cast<int64_t>(mv.size());
    if (first < 0 || end > model.layout().total()) {
        throw Error(fmt::format("checkpoint: moments for elements [{}, {}) of a layout of {}", first, end,
                                model.layout().total()));
    }
    load_model_weights(model, dir + "/model.safetensors");
    const SafetensorsReader opt(dir + "/optimizer.safetensors");
    for (const ParamSpec& s : model.layout().specs()) {
        // Every tensor is checked; only the part that lies in [first, end) is read.
        const int64_t lo = std::clamp(s.offset, first, end), hi = std::clamp(s.offset + s.reserved, first, end);
        const size_t at = static_cast<size_t>(lo - first);
        const bool wide = mv.precision == MomentPrecision::F32;
        read_moment(opt, s, "m/", lo, hi, wide ? mv.m.data() + at : nullptr, wide ? nullptr : mv.m_bf16.data() + at);
        read_moment(opt, s, "v/", lo, hi, wide ? mv.v.data() + at : nullptr, wide ? nullptr : mv.v_bf16.data() + at);
        check_moments(mv, s, first, lo, hi, opt.path());
    }
    moments.steps = read_state(dir + "/state.json", state);
}

}  // namespace lmforge
