// lmforge sample --checkpoint DIR: text from a trained model, streamed as it is generated.
#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>

#include "backend/threads.h"
#include "cli/commands.h"
#include "cli/run_tokenizer.h"
#include "cli/flags.h"
#include "core/error.h"
#include "core/log.h"
#include "data/data_home.h"
#include "checkpoint/checkpoint.h"
#include "data/tokenizer_spec.h"
#include "tokenizer/tokenizer_io.h"
#include "tokenizer/utf8_stream.h"
#include "checkpoint/recorded_model.h"
#include "train/sampler.h"

namespace lmforge::cli {

namespace {

// The tokenizer a run saved beside its checkpoints (run/tokenizer), unless one is given.
std::unique_ptr<Tokenizer> tokenizer_for(const std::string& checkpoint, const std::string& flag) {
    if (!flag.empty()) return open_tokenizer(flag, data_home());
    const std::string saved = find_run_tokenizer(checkpoint);
    if (!saved.empty()) return open_tokenizer(saved, data_home());
    throw InputError(fmt::format("{}: no tokenizer saved with the run", checkpoint), "pass --tokenizer");
}

}  // namespace

void add_sample_command(CLI::App& app) {
    struct Flags {
        std::string checkpoint, prompt, tokenizer;
        int64_t max_new_tokens = 200, top_k = 0, num_samples = 1, seed = 1337;
        double temperature = 0.8, top_p = 1.0;
        bool no_kv_cache = false;
        std::optional<int> threads;
    };
    auto f = std::make_shared<Flags>();
    CLI::App* cmd = app.add_subcommand("sample", "Generate text from a checkpoint (KV cache, sliding past the context; streamed)");
    cmd->add_option("--checkpoint", f->checkpoint, "Checkpoint directory")->required();
    cmd->add_option("--prompt", f->prompt, "Text to continue (default: a new document)");
    cmd->add_option("--max-new-tokens", f->max_new_tokens, "Tokens to generate")->check(integer_at_least(1))->capture_default_str();
    cmd->add_option("--temperature", f->temperature, "0: greedy")->capture_default_str();
    cmd->add_option("--top-k", f->top_k, "Sample among the k likeliest; 0: all")->check(integer_at_least(0))->capture_default_str();
    cmd->add_option("--top-p", f->top_p, "Nucleus: the likeliest tokens up to this probability")->capture_default_str();
    cmd->add_option("--num-samples", f->num_samples, "Samples")->check(integer_at_least(1))->capture_default_str();
    cmd->add_option("--seed", f->seed, "Seed: the same seed gives the same samples")->capture_default_str();
    cmd->add_option("--tokenizer", f->tokenizer, "Tokenizer (default: the run's)");
    cmd->add_option("--threads", f->threads, "Threads (default: every core)")->check(integer_at_least(1));
    cmd->add_flag("--no-kv-cache", f->no_kv_cache, "Recompute the whole sequence for every token (to compare)");
    cmd->callback([f] {
        if (!(std::isfinite(f->temperature) && f->temperature >= 0)) {
            throw InputError(fmt::format("--temperature {} must be a finite number, 0 or more", f->temperature),
                             "0 is greedy");
        }
        if (!(f->top_p > 0 && f->top_p <= 1)) throw InputError(fmt::format("--top-p {} must lie in (0, 1]", f->top_p));
        backend::set_threads(f->threads.value_or(backend::hardware_threads()), "--threads");
        const auto tokenizer = tokenizer_for(f->checkpoint, f->tokenizer);
        const std::string weights = f->checkpoint + "/model.safetensors";
        auto gemm = backend::make_gemm(backend::GemmKind::Onednn);
        const std::unique_ptr<CausalLm> lm = load_recorded_causal_lm(weights, *gemm, "sample");
        CausalLm& model = *lm;
        const int32_t eot = tokenizer->eot_id().value_or(0);
        std::vector<int32_t> prompt = f->prompt.empty() ? std::vector<int32_t>{eot} : tokenizer->encode(f->prompt);
        const int64_t context = model.context_length();
        if (static_cast<int64_t>(prompt.size()) > context) {
            throw InputError(fmt::format("--prompt is {} tokens, longer than the model's context ({} tokens)",
                                         prompt.size(), context),
                             "shorten the prompt");
        }
        const SampleOptions opts{f->max_new_tokens, f->temperature, f->top_k, f->top_p, tokenizer->eot_id()};
        Rng rng(static_cast<uint64_t>(f->seed));
        const std::unique_ptr<Decoder> decoder = model.decoder(*gemm);
        for (int64_t i = 0; i < f->num_samples; i++) {
            if (f->num_samples > 1) fmt::print("--- sample {} ---\n", i + 1);
            std::fwrite(f->prompt.data(), 1, f->prompt.size(), stdout);
            Utf8Stream text;  // a token may end inside a character: its bytes wait for the rest
            const auto print = [](const std::string& piece) {
                std::fwrite(piece.data(), 1, piece.size(), stdout);
                std::fflush(stdout);
            };
            const auto stream = [&](int32_t id) {
                if (id != eot) print(text.push(tokenizer->decode(std::span(&id, 1))));
            };
            const std::vector<int32_t> ids = f->no_kv_cache ? generate_without_cache(model, prompt, opts, rng)
                                                             : generate(*decoder, prompt, opts, rng, stream);
            if (f->no_kv_cache) {
                for (int32_t id : ids) stream(id);
            }
            print(text.finish());
            std::fputc('\n', stdout);
            // The last token is never fed back, so the window slid once prompt and sample
            // passed the context by more than it.
            if (static_cast<int64_t>(prompt.size() + ids.size()) > context + 1) {
                std::fflush(stdout);
                log::info("the sample outgrew the model's context of {} tokens: past it, each token was drawn "
                          "from the last {} to {} tokens (a sliding window)",
                          context, sliding_window_keep(context), context);
            }
        }
    });
}

}  // namespace lmforge::cli
