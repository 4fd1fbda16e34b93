#include "train/evaluator.h"

#include <cmath>
#include <vector>

namespace lmforge {

EvalResult evaluate(Gpt2& model, DataLoader& loader, int64_t batches) {
    const int64_t B = model.batch(), T = model.seq_len();
    if (batches <= 0) batches = std::max<int64_t>(1, loader.windows_per_epoch() / B);
    std::vector<int32_t> x(B * T), y(B * T);
    loader.reset();
    double sum = 0;
    for (int64_t i = 0; i < batches; i++) {
        loader.next_batch(x.data(), y.data());
        sum += model.forward(x.data(), y.data());
    }
    EvalResult r;
    r.batches = batches;
    r.tokens = batches * B * T;
    r.loss = sum / static_cast<double>(batches);
    r.perplexity = std::exp(r.loss);
    return r;
}

}  // namespace lmforge
