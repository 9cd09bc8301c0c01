#!/usr/bin/env bash
# The README's test command: installs what is missing, builds (CUDA for sm_90 when nvcc is present), runs ctest.
# GPU-labelled tests skip themselves without a device.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/scripts/build.sh" -DCNN_CUDA_ARCHS=90 -DCNN_TESTS=ON
export OMP_WAIT_POLICY=passive  # idle OpenMP threads must not spin against OpenBLAS on small machines
cd "$root/build"
ctest --output-on-failure -j "$(nproc)"
