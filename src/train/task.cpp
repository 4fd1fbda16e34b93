#include "train/task.h"

#include "train/classify_task.h"
#include "train/distill_task.h"
#include "train/lm_task.h"
#include "train/mlm_task.h"
#include "train/sft_task.h"

namespace lmforge {

std::unique_ptr<Task> make_task(const TrainConfig& cfg, const Tokenizer* tokenizer) {
    const std::string& task = cfg.train.task;  // one of these five: validate_config says so
    if (task == "classify") return make_classify_task(cfg);
    if (task == "mlm") return make_mlm_task(cfg);
    if (task == "sft") return make_sft_task(cfg, tokenizer);
    if (task == "distill") return make_distill_task(cfg, tokenizer);
    return make_lm_task(cfg, tokenizer);
}

}  // namespace lmforge
