#include "train/evaluator.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/crossentropy.h"

namespace lmforge {

EvalResult evaluate(Gpt2& model, DataLoader& loader, int64_t batches) {
    const int64_t B = model.batch(), T = model.seq_len();
    const DataLoaderOptions& o = loader.options();
    const int64_t per_batch = B * o.world;  // windows one batch takes, all ranks together
    const int64_t all = loader.windows_per_epoch();
    const int64_t windows = batches > 0 ? std::min(batches * per_batch, all) : all;
    EvalResult r;
    r.batches = (windows + per_batch - 1) / per_batch;
    std::vector<int32_t> x(B * T), y(B * T);
    loader.reset();
    for (int64_t i = 0; i < r.batches; i++) {
        loader.next_batch(x.data(), y.data());
        // Rows past the split's end (the next epoch's windows again) count for nothing.
        const int64_t first = i * per_batch + o.rank * B;
        const int64_t rows = std::clamp<int64_t>(windows - first, 0, B);
        std::fill(y.begin() + rows * T, y.end(), kernels::kIgnoreIndex);
        if (rows == 0) continue;
        r.loss_sum += static_cast<double>(model.forward(x.data(), y.data())) * static_cast<double>(rows * T);
        r.tokens += rows * T;
    }
    r.loss = r.tokens > 0 ? r.loss_sum / static_cast<double>(r.tokens) : std::nan("");
    r.perplexity = std::exp(r.loss);
    return r;
}

}  // namespace lmforge
