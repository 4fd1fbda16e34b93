// Where a run's memory goes, by part: LoRA's frozen base, the trainable parameters, their
// gradients, the optimizer's moments and the activations. The training log and `bench` state
// it, so a user knows before a long run what a model and its settings need.
#pragma once

#include <string>

#include "distributed/data_parallel.h"
#include "model/model.h"

namespace lmforge {

struct MemoryParts {
    double frozen_mib = 0, weights_mib = 0, gradients_mib = 0, moments_mib = 0, activations_mib = 0;
    bool bf16_gradients = false;  // kept in bf16 (with their fp32 window)
    double total_mib() const { return frozen_mib + weights_mib + gradients_mib + moments_mib + activations_mib; }
};

// The model's parts as planned (activations of its largest plan so far) and this process's
// share of the optimizer state.
MemoryParts memory_parts(const Model& model, const DataParallel& dp);

// "frozen base 2357 MiB (bf16) + weights 86 MiB + gradients 43 MiB + AdamW moments 86 MiB +
// activations 612 MiB = 3184 MiB"; parts that are 0 are left out.
std::string describe_memory(const MemoryParts& m, Precision precision);

}  // namespace lmforge
