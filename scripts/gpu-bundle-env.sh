# Sourced by the GPU-machine scripts (gpu-run.sh, gpu-profile.sh): unpacks the carried .device/bundle.tar.xz once
# (python3's tarfile, which the GPU machine has), sources the bundle's environment and sets `root`, `bundle` and
# `out` ($OUT, or .device/out). Exits 2 with one line, named after the calling script, when there is no bundle.
_caller=$(basename "$0")
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bundle="$root/.device/bundle"
if [ ! -f "$bundle/env.sh" ] && [ -f "$root/.device/bundle.tar.xz" ]; then
  python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' \
    "$root/.device/bundle.tar.xz" "$root/.device" || { echo "$_caller: cannot unpack the bundle" >&2; exit 2; }
fi
if [ ! -f "$bundle/env.sh" ] || [ ! -d "$bundle/bin" ]; then
  echo "$_caller: no bundle at $bundle (build it with scripts/device-bundle.sh and carry .device/bundle.tar.xz)" >&2
  exit 2
fi
out=${OUT:-$root/.device/out}
mkdir -p "$out"
# shellcheck source=/dev/null
source "$bundle/env.sh"
