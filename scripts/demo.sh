#!/usr/bin/env bash
# The README's demo: installs what is missing, builds (scripts/build.sh), trains the Fashion-MNIST MLP on the CPU.
# usage: scripts/demo.sh [mnist-mlp flags, e.g. --epochs 2 --device cuda]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/scripts/build.sh"
# Idle OpenMP threads sleep instead of spinning, leaving the cores to OpenBLAS between parallel loops.
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
exec "$root/build/bin/mnist-mlp" "$@"
