#!/usr/bin/env bash
# Builds for sm_90 (Release, tests on) and bundles every test binary and app under build/bin, with the non-CUDA
# libraries they need, into .device/bundle for the GPU machine (run there: scripts/gpu-run.sh).
# usage: scripts/device-bundle.sh [extra cmake -D options...]    (JOBS=n sets the build parallelism, default 2)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
bundle_sh=${CNN_BUNDLE_SH:-../shared/device/bundle.sh}
[ -x "$bundle_sh" ] || { echo "device-bundle.sh: $bundle_sh not found (run from a checkout beside shared/, or set CNN_BUNDLE_SH)" >&2; exit 2; }
cmake -S . -B build -G Ninja -DCNN_CUDA_ARCHS=90 -DCMAKE_BUILD_TYPE=Release -DCNN_TESTS=ON "$@" >/dev/null
cmake --build build -j "${JOBS:-2}"
bins=()
for b in build/bin/*; do
  [ -f "$b" ] && [ -x "$b" ] && bins+=("$b")
done
[ "${#bins[@]}" -gt 0 ] || { echo "device-bundle.sh: no executables in build/bin" >&2; exit 2; }
rm -rf .device/bundle
"$bundle_sh" .device/bundle "${bins[@]}"
# The build's identity, which the perf pages print (bench/dwconv_h200_tables.sh).
{ git rev-parse HEAD 2>/dev/null || echo 'no git commit'; } | tr -d '\n' > .device/bundle/commit
git diff --quiet HEAD 2>/dev/null || echo ' + uncommitted changes' >> .device/bundle/commit
# The device tool carries at most 64 MiB with the working tree: ship the bundle xz-compressed (OpenBLAS alone is
# 35 MB); scripts/gpu-run.sh unpacks it with python3's tarfile, which the GPU machine has.
rm -f .device/bundle.tar.xz
tar -C .device -cf - bundle | xz -T2 -6 > .device/bundle.tar.xz.tmp && mv .device/bundle.tar.xz.tmp .device/bundle.tar.xz
kib=$(du -sk .device/bundle.tar.xz | cut -f1)
[ "$kib" -le 60000 ] || { echo "device-bundle.sh: compressed bundle is ${kib} KiB, over the ~60 MiB that can be carried" >&2; exit 1; }
echo "bundled (${kib} KiB compressed, carry .device/bundle.tar.xz): ${bins[*]}"
