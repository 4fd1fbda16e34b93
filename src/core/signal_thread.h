// Asynchronous signals that lmforge handles (SIGINT, SIGTERM, SIGUSR1) are taken on one thread
// of their own, never on a thread that computes. oneDNN's JIT GEMM kernels (2.6, AVX2 sgemm
// with one thread) move the stack pointer into a heap workspace while they run: a signal taken
// there has its frame written below that pointer, over the heap, and glibc later aborts on the
// broken chunk ("corrupted size vs. prev_size"). Stopped runs died so in 5-15% of tries.
#pragma once

namespace lmforge {

// Call first in main, before any other thread exists: blocks those signals in the calling
// thread, and so in every thread created after it (OpenMP's, MPI's), and starts one thread
// that leaves them unblocked and sleeps. The handlers installed with sigaction, or the default
// actions, then run there. Later calls do nothing.
void take_signals_on_own_thread();

}  // namespace lmforge
