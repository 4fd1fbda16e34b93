// A checkpoint's state.json (checkpoint/checkpoint.h: read_training_state), which a resume
// reads and a user may have edited or damaged: every field is range-checked, and anything
// else is an InputError naming the file.
#include <cstdint>

#include "checkpoint/checkpoint.h"
#include "fuzz_util.h"

using namespace lmforge;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    fuzz::write_scratch("ckpt/state.json", fuzz::as_text(data, size));
    fuzz::accepts([&] {
        const TrainingState state = read_training_state((fuzz::scratch_dir() / "ckpt").string());
        fuzz::check(state.step >= 0 && state.best_step <= state.step && state.tokens_seen >= 0 &&
                        state.train_seconds >= 0 && state.global_batch >= 0 && state.max_steps >= 0,
                    "read_training_state() let a number out of its range");
    });
    return 0;
}
