// What a run may resume from, and with what global batch: the checks that come before any
// weights are loaded or anything is written, so that a refusal changes nothing.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "checkpoint/checkpoint.h"

namespace lmforge {

// InputError, naming the checkpoint and what differs, unless the checkpoint is of this task,
// this model (architecture and every shape field of `model_json`, Model::config_json()) and
// this data (its fingerprint).
void check_resumable(const TrainingState& saved, const nlohmann::json& saved_model, const std::string& task,
                     const nlohmann::json& model_json, const std::string& fingerprint, const std::string& checkpoint);

// The global batch of a run, in sequences a step over all processes, for micro-batches of
// `per_micro` sequences (batch_size · processes):
//   - requested > 0 (lm's train.total_batch_tokens): that, a change on resume said in the log;
//   - resuming: the run's own, whatever the number of processes now, as accumulation;
//   - else one micro-batch.
// InputError where the run's is not a multiple of per_micro, and for an epoch-based task where
// a different one is requested: the data order within its epochs depends on it.
int64_t resolve_global_batch(int64_t requested, int64_t saved, int64_t per_micro, bool epoch_based,
                             const std::string& checkpoint);

}  // namespace lmforge
