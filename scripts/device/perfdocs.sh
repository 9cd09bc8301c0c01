#!/usr/bin/env bash
# GPU machine: the depthwise perf pages' runs (bench/dwconv_h200_tables.sh), FP32 then FP16, within one device
# command. Each dtype's files land in $OUT (the page dwconv-fp{32,16}-h200.md and its .csv.gz / .log.gz files:
# copy them to docs/perf/ as they are). A dtype that does not finish in its share of the time keeps what it
# measured; its page lists the points left out.
# usage: scripts/device/perfdocs.sh [f32|f16|both] [SECONDS]   (default both in 480 s: FP32 260 s, FP16 the rest)
# Needs .device/bundle.tar.xz carried (scripts/device-bundle.sh) and python3 with PyTorch (the GPU machine has it).
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
what=${1:-both}
total=${2:-480}
if ! [[ $total =~ ^[0-9]+$ ]] || [ "$total" -lt 60 ]; then
  echo "perfdocs.sh: SECONDS: expected an integer >= 60, got '$total'" >&2
  exit 2
fi
case "$what" in
  f32 | f16) "$root/bench/dwconv_h200_tables.sh" "$what" --seconds "$total"; exit $? ;;
  both) ;;
  *) echo "perfdocs.sh: expected f32, f16 or both, got '$what'" >&2; exit 2 ;;
esac
start=$SECONDS
status=0
"$root/bench/dwconv_h200_tables.sh" f32 --seconds $((total * 13 / 24)) || status=1
"$root/bench/dwconv_h200_tables.sh" f16 --seconds $((total - (SECONDS - start) - 5)) || status=1
echo "perfdocs.sh: both dtypes after $((SECONDS - start)) s, status $status"
exit $status
