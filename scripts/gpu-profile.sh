#!/usr/bin/env bash
# Nsight Compute report of one depthwise kernel on the GPU machine: runs dwconv-bench for one point under ncu and
# keeps the report of one launch (after the benchmark's warm-up) with the sections that say why a kernel is slow:
# speed of light, occupancy, scheduler and warp-state statistics (stall reasons), instruction mix, memory traffic
# and source counters (the SASS lines where warps stall), and the average warps stalled per issue for each stall
# reason (what the latency is spent on).
# usage: scripts/gpu-profile.sh [--cudnn] LABEL KERNEL_REGEX [VAR=VALUE ...] -- DWCONV_BENCH_ARGS...
#        scripts/gpu-profile.sh --list LABEL [VAR=VALUE ...] -- DWCONV_BENCH_ARGS...
#   e.g. scripts/gpu-profile.sh ring13 tc_ring -- --dtype f16 --op fwd --maps 128x32x32x1024 --filters 13
#        scripts/gpu-profile.sh bfc7tiled bfc_f16 CNN_DWCONV=bfc=strip -- --dtype f16 --op bfc --filters 7
#        scripts/gpu-profile.sh --list cudnn3 -- --dtype f16 --op fwd --maps 128x32x32x1024 --filters 3
# --cudnn keeps cuDNN on (the benchmark times its candidates too), to profile one of cuDNN's kernels; --list runs
# the point once with cuDNN on and writes every kernel launched with its duration (speed-of-light section only), to
# find the name of the kernel cuDNN's winner runs. Writes $OUT/ncu_LABEL.txt (or .device/out/ without $OUT). The
# bundle comes from scripts/device-bundle.sh. The clocks are left as the machine runs them (--clock-control none),
# so the report's durations are comparable with the benchmark's.
set -uo pipefail
usage="usage: scripts/gpu-profile.sh [--cudnn|--list] LABEL [KERNEL_REGEX] [VAR=VALUE ...] -- DWCONV_BENCH_ARGS..."
mode=one
case "${1:-}" in
  --cudnn) mode=cudnn; shift ;;
  --list) mode=list; shift ;;
esac
if [ "$mode" = list ]; then
  [ $# -ge 2 ] || { echo "$usage" >&2; exit 2; }
  label=$1 regex=.
  shift 1
else
  [ $# -ge 3 ] || { echo "$usage" >&2; exit 2; }
  label=$1 regex=$2
  shift 2
fi
envs=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
  case "$1" in
    *=*) envs+=("$1") ;;
    *) echo "gpu-profile.sh: expected VAR=VALUE or --, got '$1'" >&2; exit 2 ;;
  esac
  shift
done
[ "${1:-}" = "--" ] || { echo "gpu-profile.sh: missing -- before the dwconv-bench arguments" >&2; exit 2; }
shift
case "$label" in
  *[!A-Za-z0-9_.-]*|"") echo "gpu-profile.sh: LABEL must be letters, digits, '_', '.', '-', got '$label'" >&2; exit 2 ;;
esac

ncu=${NCU:-/usr/local/cuda/bin/ncu}
[ -x "$ncu" ] || { echo "gpu-profile.sh: no ncu at $ncu (set NCU)" >&2; exit 2; }
# shellcheck source=scripts/gpu-bundle-env.sh
source "$(dirname "${BASH_SOURCE[0]}")/gpu-bundle-env.sh"
report="$out/ncu_$label.txt"

if [ "$mode" = list ]; then
  # Every launch of one pass over the point (no warm-up, one timed run): names and durations only.
  env "${envs[@]}" "$ncu" --clock-control none --section SpeedOfLight --launch-count 400 \
    "$bundle/bin/dwconv-bench" --no-check --warmup 0 --reps 1 "$@" > "$report.tmp" 2>&1
  rc=$?
  mv "$report.tmp" "$report"
  python3 - "$report" <<'PY'
import re, sys
name = None
for line in open(sys.argv[1], errors='replace'):
    m = re.match(r'  (\S.*\(\d+, \d+, \d+\)x\(\d+, \d+, \d+\).*)', line)
    if m:
        name = m.group(1)[:150]
    elif name and re.search(r'^\s+Duration\s', line):
        print(line.split()[-1], line.split()[-2], name)
        name = None
PY
  echo "gpu-profile.sh: $report (rc=$rc)"
  exit 0
fi
cudnn_args=(--no-cudnn)
[ "$mode" = cudnn ] && cudnn_args=()
# One warm-up launch is skipped (module load, first-touch); the benchmark's own timing runs are kept short.
env "${envs[@]}" "$ncu" --clock-control none --kernel-name "regex:$regex" --launch-skip 1 --launch-count 1 \
  --section SpeedOfLight --section Occupancy --section LaunchStats --section SchedulerStats \
  --section WarpStateStats --section InstructionStats --section ComputeWorkloadAnalysis \
  --section MemoryWorkloadAnalysis --section SourceCounters \
  --metrics 'regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio' \
  "$bundle/bin/dwconv-bench" "${cudnn_args[@]}" --no-check --warmup 1 --reps 3 "$@" > "$report.tmp" 2>&1
rc=$?
mv "$report.tmp" "$report"
grep -qE "Section: Warp State" "$report" || { echo "gpu-profile.sh: ncu wrote no report for '$regex' (rc=$rc): $report" >&2; exit 1; }
grep -E "^  [A-Za-z_].*\(|Duration|Registers Per Thread|Achieved Occupancy|Issue Slots Busy|Warp Cycles Per Issued|Eligible Warps" "$report" | head -20
echo "gpu-profile.sh: $report"
exit 0
