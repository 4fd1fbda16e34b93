// Prints the kernel levels (backend/isa.h) the configuring machine's CPU runs, as a CMake list:
// the kernel tests run once per level there.
#include <cstdio>

int main() {
    std::printf("baseline");
    if (__builtin_cpu_supports("x86-64-v3")) std::printf(";avx2");
    if (__builtin_cpu_supports("x86-64-v4")) std::printf(";avx512");
    return 0;
}
