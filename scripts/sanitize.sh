#!/usr/bin/env bash
# CPU-only AddressSanitizer + UndefinedBehaviorSanitizer build in build-asan/ (-DCNN_CUDA=OFF -DCNN_SANITIZE=ON),
# then its CPU tests: every unit-test binary and the fuzz corpus (tests/fuzz). Any sanitizer report fails the run
# (UBSan does not recover; ASan stops at the first error). Timing on the 2-core build machine: docs/reliability.md.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/scripts/install-deps.sh" >/dev/null
cmake -S "$root" -B "$root/build-asan" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCNN_CUDA=OFF -DCNN_SANITIZE=ON \
  -DCNN_TESTS=ON >/dev/null
cmake --build "$root/build-asan" -j "$(nproc)"
export OMP_WAIT_POLICY=passive
# allocator_may_return_null: an impossible allocation returns null, as glibc's does (the allocators turn that into
# an "out of memory on cpu" error, which a test asks for), instead of ASan aborting the process.
export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:allocator_may_return_null=1"
export LSAN_OPTIONS="suppressions=$root/tests/fuzz/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
ctest --test-dir "$root/build-asan" -L cpu --output-on-failure -j "$(nproc)"
