// `lmforge train` with train.task = "mlm": masked-LM pretraining of a BERT encoder
// (model.preset bert-*) on the token shards of `lmforge prepare` (mlm_batches.h): AdamW with
// warmup and cosine decay, gradient clipping, mixed precision, under mpirun each rank on its
// own batches; MLM loss and masked-token accuracy logged, and evaluated on the validation
// split with the same masks every time; the best weights by validation loss kept in best/,
// the last in final/. (Resume is the language-model trainer's alone so far.)
#pragma once

#include <string>

#include "train/trainer.h"

namespace lmforge {

struct MlmSummary {
    std::string run_dir;
    int64_t steps = 0;
    double train_loss = 0, train_accuracy = 0;  // of the last logged steps
    double val_loss = 0, val_accuracy = 0;      // of the last evaluation
    double best_val_loss = 0;
    double seconds = 0;
    int rank = 0;
};

MlmSummary train_mlm(const TrainOptions& opts);

}  // namespace lmforge
