#include "core/arena.h"

#include <fmt/format.h>

#include "core/error.h"

namespace lmforge {

void* Arena::alloc_bytes(size_t bytes) {
    const size_t need = bytes_for(bytes);
    if (used_ + need > block_.size()) {
        // An internal sizing bug, not a user error: the plan must size the arena exactly.
        throw Error(fmt::format("arena full: {} bytes asked, {} of {} used", bytes, used_,
                                block_.size()));
    }
    void* p = block_.data() + used_;
    used_ += need;
    return p;
}

}  // namespace lmforge
