#include "train/resume.h"

#include <fmt/format.h>

#include "core/error.h"
#include "core/log.h"

namespace lmforge {

void check_resumable(const TrainingState& saved, const nlohmann::json& saved_model, const std::string& task,
                     const nlohmann::json& model_json, const std::string& fingerprint, const std::string& checkpoint) {
    if (saved.task != task) {
        throw InputError(fmt::format("{}: a checkpoint of train.task = \"{}\", not \"{}\"", checkpoint, saved.task, task),
                         "train in another run directory (run.dir), or resume with the run's own task");
    }
    for (const auto& [key, value] : model_json.items()) {
        const nlohmann::json was = saved_model.contains(key) ? saved_model.at(key) : nlohmann::json();
        if (was != value) {
            throw InputError(fmt::format("{}: the checkpoint's model has {} = {}, the configuration {}", checkpoint, key,
                                         was.dump(), value.dump()),
                             "resume with the run's own model settings, or start a new run directory");
        }
    }
    if (!saved.data_fingerprint.empty() && saved.data_fingerprint != fingerprint) {
        throw InputError(fmt::format("{}: the run trained on other data than data.dir holds now (fingerprint {}, now {})",
                                     checkpoint, saved.data_fingerprint, fingerprint),
                         "resume on the data the run started with, or start a new run directory");
    }
}

int64_t resolve_global_batch(int64_t requested, int64_t saved, int64_t per_micro, bool epoch_based,
                             const std::string& checkpoint) {
    if (saved <= 0) return requested > 0 ? requested : per_micro;
    if (requested > 0 && requested != saved) {
        if (epoch_based) {
            throw InputError(fmt::format("{}: the run's global batch is {} sequences, the configuration asks for {}",
                                         checkpoint, saved, requested),
                             "an epoch's data order follows its global batch: resume with the run's own");
        }
        log::warn("the global batch changes from the run's {} sequences to {}", saved, requested);
        return requested;
    }
    if (saved % per_micro != 0) {
        throw InputError(fmt::format("{}: the run's global batch of {} sequences is not a multiple of batch_size · "
                                     "processes = {} here",
                                     checkpoint, saved, per_micro),
                         epoch_based ? "resume with a batch_size and process count whose product divides it"
                                     : "resume with a process count that divides it, or set train.total_batch_tokens");
    }
    return saved;
}

}  // namespace lmforge
