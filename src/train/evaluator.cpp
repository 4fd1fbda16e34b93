#include "train/evaluator.h"

#include <algorithm>

#include "kernels/crossentropy.h"

namespace lmforge {

LossSum evaluate_windows(Model& model, DataLoader& loader, int64_t wanted) {
    const DataLoaderOptions& o = loader.options();
    const int64_t B = o.B, T = o.T;
    const int64_t per_batch = B * o.world;  // windows one batch takes, all ranks together
    const int64_t all = loader.windows_per_epoch();
    const int64_t windows = wanted > 0 ? std::min(wanted, all) : all;
    const int64_t count = (windows + per_batch - 1) / per_batch;
    Batch batch;
    batch.resize_for_tokens(B, T);
    LossSum loss;
    loader.reset();
    for (int64_t i = 0; i < count; i++) {
        loader.next_batch(batch.inputs.data(), batch.targets.data());
        // Rows past the split's end (the next epoch's windows again) count for nothing.
        const int64_t first = i * per_batch + o.rank * B;
        const int64_t rows = std::clamp<int64_t>(windows - first, 0, B);
        std::fill(batch.targets.begin() + rows * T, batch.targets.end(), kernels::kIgnoreIndex);
        if (rows > 0) loss += model.forward(batch);
    }
    return loss;
}

}  // namespace lmforge
