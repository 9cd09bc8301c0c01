#!/usr/bin/env bash
# The README's demo: installs what is missing, builds (scripts/build.sh), then trains the default run
# (configs/train/fmnist_demo.yaml: ConvMixer-128/6, 7x7 depthwise kernels, Fashion-MNIST) with cnn-train on the
# GPU when there is one, else on the CPU. Extra arguments are cnn-train flags, e.g. --epochs 2 --device cpu.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/scripts/build.sh"
# Idle OpenMP threads sleep instead of spinning, leaving the cores to OpenBLAS between parallel loops.
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
cd "$root"
exec "$root/build/bin/cnn-train" --config "$root/configs/train/fmnist_demo.yaml" "$@"
