// Closes what kernels/isa_begin.h opened, at the end of a kernel file.
#if defined(LMFORGE_KERNEL_ISA_AVX512) || defined(LMFORGE_KERNEL_ISA_AVX2)
#pragma GCC pop_options
#endif
#undef LMFORGE_ISA_NAMESPACE
#undef LMFORGE_ISA_AVX512
