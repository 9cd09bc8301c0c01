#!/usr/bin/env bash
# Installs missing dependencies, then configures and builds into build/ (CUDA too when nvcc is present).
# usage: scripts/build.sh [extra cmake -D options...]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/scripts/install-deps.sh"
jobs=$(nproc)
cmake -S "$root" -B "$root/build" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build "$root/build" -j "$jobs"
