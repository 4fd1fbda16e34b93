// Included after a kernel file's last #include: the code between it and kernels/isa_end.h is
// compiled for the instruction-set level the build names (CMake compiles each kernel file once
// per level, backend/isa.h) and lives in a namespace of that level's name, which
// kernels/dispatch.cpp calls. Everything included before stays compiled for the baseline, so
// the inline functions and templates that every level's object file holds are the same code
// in each: the linker may keep any copy. (Inlined into a kernel, they take its level.)
#if defined(LMFORGE_KERNEL_ISA_AVX512)
#define LMFORGE_ISA_NAMESPACE avx512
#pragma GCC push_options
#pragma GCC target("arch=x86-64-v4,prefer-vector-width=512")
#elif defined(LMFORGE_KERNEL_ISA_AVX2)
#define LMFORGE_ISA_NAMESPACE avx2
#pragma GCC push_options
#pragma GCC target("arch=x86-64-v3")
#elif defined(LMFORGE_KERNEL_ISA_BASELINE)
#define LMFORGE_ISA_NAMESPACE baseline
#else  // a native build: one level, with the build's own flags
#define LMFORGE_ISA_NAMESPACE native
#endif
// Whether this level has AVX-512, for code written with its intrinsics. (GCC's target pragma
// does not define __AVX512F__ for C++, so the level says it.)
#if defined(LMFORGE_KERNEL_ISA_AVX512) || (!defined(LMFORGE_KERNEL_ISA_AVX2) && !defined(LMFORGE_KERNEL_ISA_BASELINE) && defined(__AVX512F__))
#define LMFORGE_ISA_AVX512 1
#else
#define LMFORGE_ISA_AVX512 0
#endif
