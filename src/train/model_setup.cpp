#include "train/model_setup.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.h"

namespace lmforge {

namespace {

// The vocabulary the data was made with, from prepare.json (0 if unknown).
int64_t data_vocab_size(const std::string& dir) {
    std::ifstream in(dir + "/prepare.json");
    if (!in) return 0;
    const auto j = nlohmann::json::parse(in, nullptr, false);
    return j.is_object() && j.contains("vocab_size") ? j["vocab_size"].get<int64_t>() : 0;
}

}  // namespace

Gpt2Config model_config(const TrainConfig& c, int64_t seq_len) {
    Gpt2Config m = Gpt2Config::preset(c.model.preset);
    if (c.model.n_layer > 0) m.n_layer = c.model.n_layer;
    if (c.model.n_head > 0) m.n_head = c.model.n_head;
    if (c.model.n_embd > 0) m.n_embd = c.model.n_embd;
    m.vocab_size = c.model.vocab_size > 0 ? c.model.vocab_size : data_vocab_size(c.data.dir);
    if (m.vocab_size == 0) {
        throw InputError(fmt::format("{}: no prepare.json to take the vocabulary size from", c.data.dir),
                         "set model.vocab_size");
    }
    if (c.model.block_size > 0) {
        m.block_size = c.model.block_size;
        if (m.block_size < seq_len) {
            throw InputError(fmt::format("the sequence length {} exceeds model.block_size = {}", seq_len, m.block_size),
                             "shorten train.seq_len (or prepare's --max-len) or raise model.block_size");
        }
    } else {
        m.block_size = std::max(m.block_size, seq_len);
    }
    m.validate();
    return m;
}

}  // namespace lmforge
