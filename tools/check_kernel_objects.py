#!/usr/bin/env python3
"""Checks a portable build's kernel objects (one set per instruction-set level, src/kernels/isa_begin.h):
every function that uses AVX or AVX-512 registers lies in its level's namespace
(lmforge::kernels::avx2::, ...::avx512::). A function outside it -- an inline function or a
template the objects share -- is merged by the linker across levels, and one built for a higher
level could then run on a CPU without it. Also checks that each level's kernels use its
registers at all (ymm for avx2, zmm for avx512), so that the levels are what they claim.

    python3 tools/check_kernel_objects.py BUILD_DIR
"""
import glob
import os
import re
import subprocess
import sys


def functions(obj):
    """(demangled name, instructions) of each function in an object file."""
    out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", "-C", obj], capture_output=True, text=True,
                         check=True).stdout
    name, body = None, []
    for line in out.splitlines():
        head = re.match(r"^[0-9a-f]+ <(.*)>:$", line)
        if head:
            if name:
                yield name, body
            name, body = head.group(1), []
        elif name:
            body.append(line)
    if name:
        yield name, body


def outer_name(name):
    """The function's own qualified name: the demangled name without template arguments,
    parameters and lambda bodies, in whose types another namespace may appear."""
    depth, out = 0, []
    for ch in name:
        if ch in "<({":
            depth += 1
        elif ch in ">)}":
            depth -= 1
        elif depth == 0:
            out.append(ch)
    return "".join(out)


def check(build, vectorized):
    ok = True
    for level, register in [("avx2", "ymm"), ("avx512", "zmm")]:
        objects = glob.glob(os.path.join(build, f"CMakeFiles/lmforge_kernels_{level}.dir/src/kernels/*.o"))
        if not objects:
            sys.exit(f"no lmforge_kernels_{level} objects under {build}: not a portable build?")
        used = 0
        for obj in objects:
            for name, body in functions(obj):
                wide = any(re.search(r"[yz]mm", line) for line in body)
                own = f"lmforge::kernels::{level}::" in outer_name(name)
                used += wide and own and any(register in line for line in body)
                if wide and not own:
                    print(f"{os.path.basename(obj)} ({level}): {name} uses wide registers outside "
                          f"lmforge::kernels::{level}::")
                    ok = False
                if "._omp_fn." in name and not own:
                    # A parallel region in shared code (a header's template) is outlined at
                    # the baseline level, and the level's kernel runs its loop there.
                    print(f"{os.path.basename(obj)} ({level}): {name}: a parallel region outside "
                          f"lmforge::kernels::{level}::, compiled at the baseline level")
                    ok = False
        print(f"{level}: {used} kernel functions use {register}")
        ok &= used > 0 or not vectorized
    return ok


if __name__ == "__main__":
    args = sys.argv[1:]
    vectorized = "--vectorized" in args
    args = [a for a in args if a != "--vectorized"]
    if len(args) != 1:
        sys.exit("usage: check_kernel_objects.py [--vectorized] BUILD_DIR")
    sys.exit(0 if check(args[0], vectorized) else 1)
