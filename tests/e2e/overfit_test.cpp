// A tiny GPT-2 memorises one fixed batch of random tokens: forward, backward, clipping and
// AdamW together must drive the loss from ln(V) to near zero.
#include <gtest/gtest.h>

#include <cmath>

#include "backend/gemm.h"
#include "core/rng.h"
#include "model/gpt2.h"
#include "optim/adamw.h"
#include "optim/grad_clip.h"

namespace lmforge {
namespace {

TEST(Overfit, TinyModelMemorisesOneBatch) {
    const Gpt2Config cfg{.n_layer = 2, .n_head = 4, .n_embd = 64, .vocab_size = 100, .block_size = 32};
    const int64_t B = 4, T = 32, max_steps = 300;
    auto gemm = backend::make_gemm(backend::GemmKind::Onednn);
    Gpt2 model(cfg, *gemm);
    model.init_weights(42);
    model.plan(B, T);
    AdamW opt(model.layout(), AdamWConfig{});
    Rng rng(7);
    std::vector<int32_t> tokens(B * T + 1);
    for (auto& t : tokens) t = static_cast<int32_t>(rng.below(cfg.vocab_size));
    const std::vector<int32_t> inputs(tokens.begin(), tokens.end() - 1);
    const std::vector<int32_t> targets(tokens.begin() + 1, tokens.end());

    float first = 0.0f, loss = 0.0f;
    int64_t step = 0;
    for (; step < max_steps; step++) {
        model.zero_grad();
        loss = model.forward(inputs.data(), targets.data());
        if (step == 0) first = loss;
        if (loss < 0.05f) break;
        model.backward();
        clip_grad_norm(model.grads().data(), static_cast<int64_t>(model.grads().size()), 1.0);
        opt.step(model.params().data(), model.grads().data(), 3e-3f);
    }
    EXPECT_NEAR(first, std::log(100.0f), 0.3f);  // a fresh model is close to uniform
    EXPECT_LT(loss, 0.05f) << "after " << step << " steps";
    RecordProperty("steps_to_0.05", static_cast<int>(step));
}

}  // namespace
}  // namespace lmforge
