// Room for the kernels oneDNN generates. oneDNN writes a kernel it generates into a buffer it
// maps without checking that it got one: where the process may map no more (ulimit -v), it
// wrote through a null pointer (SIGSEGV in dnnl_primitive_create) or threw through
// pthread_once (SIGABRT in sgemm's first call). So lmforge asks for the room before each
// call that may generate code, and fails with an Error of its own where it is not there.
#pragma once

#include <cstdint>

namespace lmforge::backend {

// A matmul primitive's kernels took 0.5-2 MiB of address space, sgemm's (generated once) 6 MiB
// (AVX-512 and AVX512_BF16, oneDNN 2.6); the rest is a margin for other CPUs' kernels (AMX).
inline constexpr int64_t kJitRoomBytes = int64_t{32} << 20;

// Whether kJitRoomBytes of address space can be mapped now: mapped and unmapped at once, so
// nothing stays taken. Only a limit on the address space (ulimit -v) or on committed memory
// (vm.overcommit_memory = 2) makes it false.
bool has_jit_room();

// The HINTs of oneDNN's failures: for want of memory, and for any other reason (a status
// such as invalid_arguments or unimplemented, which lmforge's shapes should never meet).
inline constexpr const char* kOutOfMemoryHint =
    "give the process more memory (ulimit -v, the job's limit), or use a smaller model, batch or sequence length";
inline constexpr const char* kOnednnRefusedHint = "oneDNN refused a product lmforge asked for: please report it";

}  // namespace lmforge::backend
