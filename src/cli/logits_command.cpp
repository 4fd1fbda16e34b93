// lmforge logits --checkpoint CKPT --ids "464 3290 318" --output FILE: the model's logits for
// one sequence of token ids, (T, V) float32 in a safetensors file ("logits") — GPT-2's next-token
// logits, BERT's masked-LM logits at every position — and the most likely tokens at the last
// position on standard output; for a classifier (num_labels > 0), the head's (1, L) logits.
// For checking a model against another implementation.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <numeric>
#include <sstream>

#include "cli/commands.h"
#include "core/error.h"
#include "core/file_io.h"
#include "checkpoint/checkpoint.h"
#include "model/bert.h"
#include "checkpoint/recorded_model.h"
#include "model/gpt2.h"
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

// The logits of one sequence: (T, V) per position, or (1, L) of a classifier's head.
struct Logits {
    std::vector<float> values;
    int64_t rows = 0, cols = 0;
    bool classes = false;
};

Logits run_model(const std::string& weights, const std::string& ids_text) {
    auto gemm = backend::make_gemm(backend::GemmKind::Onednn);
    const bool bert = is_bert_family(read_model_arch(weights));
    const std::unique_ptr<Model> model = load_recorded_model(weights, *gemm);
    const int64_t context = bert ? static_cast<Bert&>(*model).config().max_position
                                 : static_cast<CausalLm&>(*model).context_length();
    const std::vector<int32_t> ids = parse_ids(ids_text, model->vocab_size());
    const auto T = static_cast<int64_t>(ids.size());
    if (T > context) throw InputError(fmt::format("--ids: {} tokens exceed the model's context of {}", T, context));
    const int64_t V = model->vocab_size(), L = model->num_labels();
    const Batch batch{.B = 1, .T = T, .inputs = ids, .lengths = {static_cast<int32_t>(T)}};
    model->forward(batch);
    if (L > 0) return {{model->class_logits(), model->class_logits() + L}, 1, L, true};
    Logits out{std::vector<float>(T * V), T, V, false};
    if (bert) {
        std::copy_n(static_cast<Bert&>(*model).logits(), T * V, out.values.begin());
    } else {
        auto& m = static_cast<CausalLm&>(*model);
        const int64_t Vp = m.padded_vocab();
        for (int64_t t = 0; t < T; t++) std::copy_n(m.logits() + t * Vp, V, out.values.begin() + t * V);
    }
    return out;
}

}  // namespace

void add_logits_command(CLI::App& app) {
    struct Flags {
        std::string checkpoint, ids, output;
        bool overwrite = false;
    };
    auto f = std::make_shared<Flags>();
    CLI::App* cmd = app.add_subcommand("logits", "Logits of a checkpoint for a sequence of token ids");
    cmd->add_option("--checkpoint", f->checkpoint, "Checkpoint directory (model.safetensors)")->required();
    cmd->add_option("--ids", f->ids, "Token ids, space-separated")->required();
    cmd->add_option("--output", f->output, "Write the (T, V) logits here (safetensors, tensor \"logits\")");
    cmd->add_flag("--overwrite", f->overwrite, "Replace an existing --output");
    cmd->callback([f] {
        // Checked before the model runs: a path the logits cannot be written to is the user's to fix.
        if (!f->output.empty()) {
            check_output("--output", f->output, {f->checkpoint}, f->overwrite);
            const std::filesystem::path parent = std::filesystem::absolute(f->output).parent_path();
            if (!std::filesystem::is_directory(parent)) {
                throw InputError(fmt::format("--output {}: no directory {}", f->output, parent.string()),
                                 "create the directory first");
            }
        }
        const Logits l = run_model(f->checkpoint + "/model.safetensors", f->ids);
        if (!f->output.empty()) {
            SafetensorsWriter w;
            w.add("logits", Dtype::F32, {l.rows, l.cols}, l.values.data());
            w.write(f->output);
        }
        if (l.classes) {
            fmt::print("class logits: {:.4f}\n", fmt::join(l.values, " "));
            return;
        }
        const float* last = l.values.data() + (l.rows - 1) * l.cols;
        std::vector<int32_t> order(l.cols);
        std::iota(order.begin(), order.end(), 0);
        const int64_t k = std::min<int64_t>(5, l.cols);
        std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int32_t a, int32_t b) { return last[a] > last[b]; });
        fmt::print("last position, most likely first:");
        for (int64_t i = 0; i < k; i++) fmt::print(" {} ({:.4f})", order[i], last[order[i]]);
        fmt::print("\n");
    });
}

}  // namespace lmforge::cli
