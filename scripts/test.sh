#!/usr/bin/env bash
# The README's test command: installs what is missing, builds (CUDA for sm_90 when nvcc is present), runs ctest.
# GPU-labelled tests skip themselves without a device. Then a CPU-only AddressSanitizer + UndefinedBehaviorSanitizer
# build (build-asan/) runs the CPU tests and the fuzz corpus again (CNN_TEST_SANITIZE=0 skips it).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/scripts/build.sh" -DCNN_CUDA_ARCHS=90 -DCNN_TESTS=ON
export OMP_WAIT_POLICY=passive  # idle OpenMP threads must not spin against OpenBLAS on small machines
ctest --test-dir "$root/build" --output-on-failure -j "$(nproc)"
if [ "${CNN_TEST_SANITIZE:-1}" != 0 ]; then
  "$root/scripts/sanitize.sh"
fi
