// A tiny GPT-2 memorises one fixed batch of random tokens: forward, backward, clipping and
// AdamW together must drive the loss from ln(V) to near zero.
#include <gtest/gtest.h>

#include <cmath>

#include "backend/gemm.h"
#include "core/rng.h"
#include "distributed/comm_single.h"
#include "distributed/data_parallel.h"
#include "model/gpt2.h"
#include "optim/adamw.h"
#include "train/train_step.h"

namespace lmforge {
namespace {

TEST(Overfit, TinyModelMemorisesOneBatch) {
    const Gpt2Config cfg{.n_layer = 2, .n_head = 4, .n_embd = 64, .vocab_size = 100, .block_size = 32};
    const int64_t B = 4, T = 32, max_steps = 300;
    auto gemm = backend::make_gemm(backend::GemmKind::Onednn);
    Gpt2 model(cfg, *gemm);
    model.init_weights(42);
    SingleCommunicator comm;
    DataParallel dp(comm, model, AdamWConfig{}, ParallelOptions{});
    Rng rng(7);
    std::vector<int32_t> tokens(B * T + 1);
    for (auto& t : tokens) t = static_cast<int32_t>(rng.below(cfg.vocab_size));
    const Batch batch{.B = B, .T = T, .inputs = {tokens.begin(), tokens.end() - 1},
                      .targets = {tokens.begin() + 1, tokens.end()}};

    double first = 0.0, loss = 0.0;
    int64_t step = 0;
    for (; step < max_steps; step++) {
        // The loss before the step's update: the training step's own.
        loss = train_step(model, dp, std::span<const Batch>(&batch, 1), 3e-3f, 1.0).loss.mean();
        if (step == 0) first = loss;
        if (loss < 0.05) break;
    }
    EXPECT_NEAR(first, std::log(100.0), 0.3);  // a fresh model is close to uniform
    EXPECT_LT(loss, 0.05) << "after " << step << " steps";
    RecordProperty("steps_to_0.05", static_cast<int>(step));
}

}  // namespace
}  // namespace lmforge
