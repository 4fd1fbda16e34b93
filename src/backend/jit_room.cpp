#include "backend/jit_room.h"

#include <sys/mman.h>

namespace lmforge::backend {

bool has_jit_room() {
    // Readable and writable as a kernel's buffer is, so that a limit on committed memory
    // counts it too; never touched, so no page is ever allocated.
    void* p = mmap(nullptr, kJitRoomBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return false;
    munmap(p, kJitRoomBytes);
    return true;
}

}  // namespace lmforge::backend
