// lmforge logits --checkpoint CKPT --ids "464 3290 318" --output FILE: the model's logits for
// one sequence of token ids, (T, V) float32 in a safetensors file ("logits"), and the most
// likely next tokens on standard output; for a classifier (num_labels > 0), the head's (1, L)
// logits on the last token. For checking a model against another implementation.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <memory>
#include <numeric>
#include <sstream>

#include "cli/commands.h"
#include "core/error.h"
#include "io/checkpoint.h"
#include "io/safetensors.h"

namespace lmforge::cli {

namespace {

std::vector<int32_t> parse_ids(const std::string& text, int64_t vocab_size) {
    std::vector<int32_t> ids;
    std::istringstream in(text);
    std::string word;
    while (in >> word) {
        size_t used = 0;
        long long id = -1;
        try {
            id = std::stoll(word, &used);
        } catch (const std::exception&) {
            used = 0;
        }
        if (used != word.size() || id < 0 || id >= vocab_size) {
            throw InputError(fmt::format("--ids: '{}' is not a token id in [0, {})", word, vocab_size));
        }
        ids.push_back(static_cast<int32_t>(id));
    }
    if (ids.empty()) throw InputError("--ids: no token ids", "give them space-separated: --ids \"464 3290\"");
    return ids;
}

}  // namespace

void add_logits_command(CLI::App& app) {
    struct Flags {
        std::string checkpoint, ids, output;
    };
    auto f = std::make_shared<Flags>();
    CLI::App* cmd = app.add_subcommand("logits", "Logits of a checkpoint for a sequence of token ids");
    cmd->add_option("--checkpoint", f->checkpoint, "Checkpoint directory (model.safetensors)")->required();
    cmd->add_option("--ids", f->ids, "Token ids, space-separated")->required();
    cmd->add_option("--output", f->output, "Write the (T, V) logits here (safetensors, tensor \"logits\")");
    cmd->callback([f] {
        const std::string weights = f->checkpoint + "/model.safetensors";
        const Gpt2Config cfg = read_model_config(weights);
        const std::vector<int32_t> ids = parse_ids(f->ids, cfg.vocab_size);
        const auto T = static_cast<int64_t>(ids.size());
        if (T > cfg.block_size) {
            throw InputError(fmt::format("--ids: {} tokens exceed the model's context of {}", T, cfg.block_size));
        }
        auto gemm = backend::make_gemm(backend::GemmKind::Onednn);
        Gpt2 model(cfg, *gemm);
        load_model_weights(model, weights);
        model.plan(1, T);
        if (cfg.num_labels > 0) {
            const int32_t last = static_cast<int32_t>(T - 1);
            model.forward_classify(ids.data(), &last, nullptr);
            const float* logits = model.class_logits();
            if (!f->output.empty()) {
                SafetensorsWriter w;
                w.add("logits", Dtype::F32, {1, cfg.num_labels}, logits);
                w.write(f->output);
            }
            fmt::print("class logits: {:.4f}\n", fmt::join(logits, logits + cfg.num_labels, " "));
            return;
        }
        model.forward(ids.data(), nullptr);
        const int64_t V = cfg.vocab_size, Vp = cfg.padded_vocab();
        std::vector<float> logits(T * V);
        for (int64_t t = 0; t < T; t++) std::copy_n(model.logits() + t * Vp, V, logits.begin() + t * V);
        if (!f->output.empty()) {
            SafetensorsWriter w;
            w.add("logits", Dtype::F32, {T, V}, logits.data());
            w.write(f->output);
        }
        const float* last = logits.data() + (T - 1) * V;
        std::vector<int32_t> order(V);
        std::iota(order.begin(), order.end(), 0);
        const int64_t k = std::min<int64_t>(5, V);
        std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int32_t a, int32_t b) { return last[a] > last[b]; });
        fmt::print("next token, most likely first:");
        for (int64_t i = 0; i < k; i++) fmt::print(" {} ({:.4f})", order[i], last[order[i]]);
        fmt::print("\n");
    });
}

}  // namespace lmforge::cli
