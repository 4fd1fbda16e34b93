#include "train/model_setup.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "checkpoint/checkpoint.h"
#include "core/error.h"
#include "core/log.h"
#include "data/prepare_record.h"
#include "model/bert.h"
#include "model/gpt2.h"
#include "model/llama.h"

namespace lmforge {

namespace {

// model.block_size, or the preset's context raised to seq_len.
int64_t context_length(const TrainConfig& c, int64_t preset_context, int64_t seq_len) {
    if (c.model.block_size <= 0) return std::max(preset_context, seq_len);
    if (c.model.block_size < seq_len) {
        throw InputError(fmt::format("the sequence length {} exceeds model.block_size = {}", seq_len,
                                     c.model.block_size),
                         "shorten train.seq_len (or prepare's --max-len) or raise model.block_size");
    }
    return c.model.block_size;
}

}  // namespace

bool is_encoder(const TrainConfig& c) { return BertConfig::is_preset(c.model.preset); }

bool is_llama(const TrainConfig& c) { return LlamaConfig::is_preset(c.model.preset); }

int64_t tokenizer_vocab_size(const TrainConfig& c) {
    const int64_t v = c.model.vocab_size > 0 ? c.model.vocab_size : data_vocab_size(c.data.dir);
    if (v == 0) {
        throw InputError(fmt::format("{}: no prepare.json to take the vocabulary size from", c.data.dir),
                         "set model.vocab_size");
    }
    return v;
}

Gpt2Config model_config(const TrainConfig& c, int64_t seq_len) {
    if (is_encoder(c)) {
        throw InputError(fmt::format("model.preset = \"{}\" is a BERT encoder, which train.task = \"{}\" does not train",
                                     c.model.preset, c.train.task),
                         "encoders train with train.task = \"mlm\" or \"classify\"; choose a gpt2 preset here");
    }
    Gpt2Config m = Gpt2Config::preset(c.model.preset);
    if (c.model.n_layer > 0) m.n_layer = c.model.n_layer;
    if (c.model.n_head > 0) m.n_head = c.model.n_head;
    if (c.model.n_embd > 0) m.n_embd = c.model.n_embd;
    m.vocab_size = tokenizer_vocab_size(c);
    m.block_size = context_length(c, m.block_size, seq_len);
    m.validate();
    return m;
}

LlamaConfig llama_model_config(const TrainConfig& c, int64_t seq_len) {
    LlamaConfig m = LlamaConfig::preset(c.model.preset);
    const LlamaConfig preset = m;
    if (c.model.n_layer > 0) m.n_layer = c.model.n_layer;
    if (c.model.n_head > 0) m.n_head = c.model.n_head;
    if (c.model.n_embd > 0) m.n_embd = c.model.n_embd;
    m.n_kv_head = c.model.n_kv_head > 0 ? c.model.n_kv_head : std::max<int64_t>(1, m.n_head * preset.n_kv_head / preset.n_head);
    // SwiGLU's width scales with the model's, kept a multiple of 8.
    m.intermediate = c.model.intermediate > 0 ? c.model.intermediate
                                              : (m.n_embd * preset.intermediate / preset.n_embd + 7) / 8 * 8;
    m.vocab_size = tokenizer_vocab_size(c);
    m.block_size = context_length(c, m.block_size, seq_len);
    m.validate();
    return m;
}

CausalShape causal_model_shape(const TrainConfig& c, int64_t seq_len) {
    if (is_llama(c)) {
        const LlamaConfig m = llama_model_config(c, seq_len);
        return {m.vocab_size, m.block_size};
    }
    const Gpt2Config m = model_config(c, seq_len);
    return {m.vocab_size, m.block_size};
}

EncoderSpecials encoder_specials(const TrainConfig& c) { return EncoderSpecials::after(tokenizer_vocab_size(c)); }

BertConfig bert_model_config(const TrainConfig& c, int64_t seq_len) {
    BertConfig m = BertConfig::preset(c.model.preset);
    if (c.model.n_layer > 0) m.n_layer = c.model.n_layer;
    if (c.model.n_head > 0) m.n_head = c.model.n_head;
    if (c.model.n_embd > 0) {
        m.hidden = c.model.n_embd;
        m.intermediate = 4 * c.model.n_embd;
    }
    m.vocab_size = encoder_specials(c).vocab_size;
    m.max_position = context_length(c, m.max_position, seq_len);
    m.validate();
    return m;
}

std::unique_ptr<Model> make_model(const TrainConfig& c, int64_t seq_len, int64_t num_labels, backend::Gemm& gemm,
                                  Precision precision, Recompute recompute) {
    if (is_encoder(c)) {
        if (recompute != Recompute::None) {
            throw InputError(fmt::format("train.recompute = \"{}\" is for GPT-2 models", recompute_name(recompute)),
                             "set train.recompute = \"none\" for a BERT model");
        }
        BertConfig m = bert_model_config(c, seq_len);
        m.num_labels = num_labels;
        m.validate();
        return std::make_unique<Bert>(m, gemm, precision);
    }
    if (is_llama(c)) {
        LlamaConfig m = llama_model_config(c, seq_len);
        m.num_labels = num_labels;
        m.validate();
        const LoraOptions lora = lora_options(c);
        auto model = std::make_unique<Llama>(m, gemm, precision, recompute, lora);
        if (lora.enabled()) model->load_base(lora.base + "/model.safetensors");
        return model;
    }
    Gpt2Config m = model_config(c, seq_len);
    m.num_labels = num_labels;
    m.validate();
    return std::make_unique<Gpt2>(m, gemm, precision, recompute);
}

LoraOptions lora_options(const TrainConfig& c) {
    LoraOptions lora;
    if (c.lora.rank == 0) return lora;
    lora.rank = c.lora.rank;
    lora.alpha = c.lora.alpha;
    lora.dropout = c.lora.dropout;
    lora.targets = LoraOptions::parse_targets(c.lora.targets);
    lora.seed = static_cast<uint64_t>(c.train.seed);
    lora.base = std::filesystem::absolute(c.model.init_from).lexically_normal().string();
    return lora;
}

void load_init_from(Model& model, const std::string& dir) {
    const std::string path = dir + "/model.safetensors";
    const std::vector<std::string> missing = load_matching_weights(model, path);
    if (missing.size() == model.layout().specs().size()) {
        throw InputError(fmt::format("{}: holds none of this model's tensors", path),
                         "model.init_from must be a checkpoint of the same architecture (gpt2, llama or bert)");
    }
    log::info("weights from {}{}", dir, missing.empty() ? "" : fmt::format(" (new: {})", fmt::join(missing, ", ")));
}

std::string model_summary(const Model& model) {
    const auto j = nlohmann::json::parse(model.config_json());
    const int64_t width = j.contains("hidden") ? j["hidden"].get<int64_t>() : j["n_embd"].get<int64_t>();
    return fmt::format("{}, {} layers, {} heads, width {}", j["arch"].get<std::string>(), j["n_layer"].get<int64_t>(),
                       j["n_head"].get<int64_t>(), width);
}

std::unique_ptr<DataParallel> make_data_parallel(const TrainConfig& c, Communicator& comm, Model& model) {
    const AdamWConfig adam{static_cast<float>(c.optim.beta1), static_cast<float>(c.optim.beta2),
                           static_cast<float>(c.optim.eps), static_cast<float>(c.optim.weight_decay),
                           parse_moment_precision(c.optim.moments, "optim.moments")};
    const ParallelOptions parallel{static_cast<int>(c.optim.zero_stage),
                                   std::max<int64_t>(1, static_cast<int64_t>(c.dist.bucket_mb * 1024 * 1024 / 4)),
                                   c.dist.overlap};
    return std::make_unique<DataParallel>(comm, model, adam, parallel);
}

}  // namespace lmforge
