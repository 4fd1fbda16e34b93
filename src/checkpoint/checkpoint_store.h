// The checkpoints of a run directory: checkpoints/step_NNNNNN/ (checkpoint/checkpoint.h), a file
// `latest` naming the newest, `best/` (the best evaluation) and `final/` (the last step of a
// finished run), keeping the last K.
// `latest` is replaced atomically after the checkpoint it names is complete, so it always
// names a whole checkpoint, even when a save was killed half way.
#pragma once

#include <optional>
#include <string>

#include "checkpoint/checkpoint.h"

namespace lmforge {

class CheckpointStore {
public:
    CheckpointStore(std::string run_dir, int64_t keep_last);

    // Saves the checkpoint for state.step, points `latest` at it, copies it to best/ if
    // is_best, and removes checkpoints beyond the last keep_last. Returns its directory.
    std::string save(const Model& model, const OptimizerMoments& moments, const TrainingState& state,
                     const CheckpointFiles& files, bool is_best);

    // Saves the checkpoint for state.step as best/ only (an evaluation that improved on a step
    // that keeps no checkpoint); `latest` and the kept checkpoints stay as they are.
    std::string save_best(const Model& model, const OptimizerMoments& moments, const TrainingState& state,
                          const CheckpointFiles& files);

    // Publishes `final/` as hard links to the files of `checkpoint` (no copy).
    void publish_final(const std::string& checkpoint) const;

    // The directory `latest` names, if any: InputError unless it names a step_N directory of
    // this run's checkpoints/.
    std::optional<std::string> latest() const;

    // Removes what killed saves of this host left behind (core/file_io.h's temporaries).
    void remove_stale_temporaries() const;

private:
    std::string run_dir_, dir_;
    int64_t keep_last_;
};

}  // namespace lmforge
