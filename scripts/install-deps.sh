#!/usr/bin/env bash
# Installs the Debian 12 packages the project builds and tests with. Idempotent: installs only what is missing.
# CUDA 13 (nvcc, cuBLAS, cuDNN, NCCL) is not installed here; CMake finds it under /usr/local/cuda when present.
set -euo pipefail
packages=(
  build-essential cmake ninja-build ccache pkg-config
  libyaml-cpp-dev libcli11-dev libgtest-dev
  libopencv-core-dev libopencv-imgproc-dev libpng-dev
  libturbojpeg0-dev libopenblas-dev nlohmann-json3-dev zlib1g-dev
  gnuplot-nox  # roofline plots: teach/dwconv/plot_roofline.py
  dataset-fashion-mnist
  python3  # the fuzz corpus (tests/fuzz) and the perf-table checks (tests/bench)
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
