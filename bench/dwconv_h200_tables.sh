#!/usr/bin/env bash
# One run of the depthwise sweep for one dtype on the GPU machine, and the perf page made from it:
# dwconv-bench (Flash-DWC against cuDNN's legacy algorithms and backend engines, checked against FP64) and PyTorch
# (bench/dwconv_torch.py) on the same points in the same call, then bench/dwconv_tables.py writes the page.
#
# usage: bench/dwconv_h200_tables.sh f32|f16 [--maps LIST] [--filters LIST] [--seconds S] [--reps N] [--warmup N]
#                                    [--probe-budget MS] [--no-torch]
# Run from the repository root with the bundle carried (.device/bundle.tar.xz, see scripts/device-bundle.sh).
# Writes to $OUT (.device/out when unset):
#   dwconv-<dt>-h200.md           the page (copy it to docs/perf/ with the four files below)
#   dwconv-<dt>-h200.csv.gz       dwconv-bench rows of every point
#   dwconv-<dt>-h200.torch.csv.gz PyTorch's rows
#   dwconv-<dt>-h200.extra.csv.gz f16 only: backward-filter with hybrid accumulation and our FP32 forward at >= 13x13
#                                 (no cuDNN: the FP16 bars compare with them)
#   dwconv-<dt>-h200.log.gz       every log of the run, the run's settings first
# The page is regenerated from those files by: python3 bench/dwconv_tables.py page <dt> docs/perf/dwconv-<dt>-h200
#
# Per map: dwconv-bench at 3x3/5x5 times cuDNN's legacy algorithms and engines (the legacy ones win some of those
# points); from 7x7 on it times the engines only (--no-cudnn-legacy): there the legacy algorithms take 0.1-26 s per
# call and lose to the engines. Then PyTorch on the map's points. --seconds bounds the whole run (default 540, under
# the GPU machine's 10 minutes per command): work that would start after it is skipped, a dwconv-bench group still
# running at the limit is stopped (its points stay out of the table, which says so).
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
die() { echo "dwconv_h200_tables.sh: $*" >&2; exit 2; }

[ $# -ge 1 ] || die "usage: $0 f32|f16 [--maps LIST] [--filters LIST] [--seconds S] [--reps N] [--warmup N]" \
  "[--probe-budget MS] [--no-torch]"
dt=$1; shift
case "$dt" in f32 | f16) ;; *) die "expected f32 or f16 as the first argument, got '$dt'" ;; esac
maps=128x64x64x256,128x32x32x1024,128x128x128x128  # cheapest first: a time limit leaves whole maps
filters=3,5,7,9,13,17,31,51
seconds=540 reps=10 warmup=2 budget=2000 torch=1
int_arg() { if ! [[ $2 =~ ^[0-9]+$ ]] || [ "$2" -eq 0 ]; then die "$1: expected a positive integer, got '$2'"; fi; }
while [ $# -gt 0 ]; do
  case "$1" in
    --maps) maps=${2:?--maps needs a value}; shift 2 ;;
    --filters) filters=${2:?--filters needs a value}; shift 2 ;;
    --seconds) int_arg "$1" "${2:-}"; seconds=$2; shift 2 ;;
    --reps) int_arg "$1" "${2:-}"; reps=$2; shift 2 ;;
    --warmup) [[ ${2:-} =~ ^[0-9]+$ ]] || die "--warmup: expected an integer >= 0, got '${2:-}'"; warmup=$2; shift 2 ;;
    --probe-budget) int_arg "$1" "${2:-}"; budget=$2; shift 2 ;;
    --no-torch) torch=0; shift ;;
    *) die "unknown argument '$1'" ;;
  esac
done
[[ $maps =~ ^[0-9x,]+$ ]] || die "--maps: expected NxHxWxC[,...], got '$maps'"
[[ $filters =~ ^[0-9,]+$ ]] || die "--filters: expected odd sizes F[,...], got '$filters'"

# shellcheck source=scripts/gpu-bundle-env.sh
source "$root/scripts/gpu-bundle-env.sh"  # sets bundle and out
bench=$bundle/bin/dwconv-bench
[ -x "$bench" ] || die "no dwconv-bench in the bundle ($bench)"
name=dwconv-$([ "$dt" = f32 ] && echo fp32 || echo fp16)-h200
work=$(mktemp -d "${TMPDIR:-/tmp}/$name.XXXXXX")
trap 'rm -rf "$work"' EXIT
end=$((SECONDS + seconds))
left() { echo $((end - SECONDS)); }
notes=()

{
  echo "command: bench/dwconv_h200_tables.sh $dt --maps $maps --filters $filters --seconds $seconds --reps $reps" \
    "--warmup $warmup --probe-budget $budget$([ $torch = 1 ] || echo ' --no-torch')"
  echo "build: $(cat "$bundle/commit" 2>/dev/null || echo 'not recorded in the bundle')"
  echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "gpu: $(nvidia-smi -L 2>&1 | head -1)"
  echo "host: $(nproc) cores, $(uname -sr)"
} > "$work/settings.txt"
cat "$work/settings.txt"

# One dwconv-bench group: stopped at the deadline (the CSV is only written when the group completes).
run_bench() {
  local tag=$1; shift
  local t; t=$(left)
  if [ "$t" -lt 20 ]; then notes+=("not run (time limit): $tag"); return; fi
  timeout --signal=INT --kill-after=10 "$t" "$bench" --dtype "$dt" --reps "$reps" --warmup "$warmup" "$@" \
    --out "$work/$tag.csv" > "$work/$tag.log" 2>&1
  local rc=$?
  echo "$tag: rc=$rc after ${SECONDS}s; $(grep -E '^summary ' "$work/$tag.log" | tr '\n' ' ')"
  [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ] && notes+=("stopped at the time limit: $tag")
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && [ "$rc" -ne 137 ]; then
    notes+=("dwconv-bench exit status $rc: $tag (see the log)")
  fi
}

pick_filters() {  # the filters F of --filters with $1 <= F <= $2, comma-separated
  local picked=() f all
  IFS=, read -ra all <<< "$filters"
  for f in "${all[@]}"; do
    if [ "$f" -ge "$1" ] && [ "$f" -le "$2" ]; then picked+=("$f"); fi
  done
  (IFS=,; echo "${picked[*]}")
}
small=$(pick_filters 1 5) large=$(pick_filters 6 9999)

IFS=, read -ra map_list <<< "$maps"
for m in "${map_list[@]}"; do
  [ -n "$small" ] && run_bench "bench_${m}_small" --maps "$m" --filters "$small" --cudnn-engines \
    --cudnn-probe-budget "$budget"
  [ -n "$large" ] && run_bench "bench_${m}_large" --maps "$m" --filters "$large" --cudnn-engines --no-cudnn-legacy \
    --cudnn-probe-budget "$budget"
  if [ "$torch" = 1 ]; then
    # A point that hangs in PyTorch's algorithm search ends its process (status 3, its row says 'timeout'); rerun.
    while :; do
      t=$(left)
      if [ "$t" -lt 15 ]; then notes+=("PyTorch not finished on $m (time limit)"); break; fi
      timeout --kill-after=10 "$t" python3 "$root/bench/dwconv_torch.py" --dtype "$dt" --maps "$m" \
        --filters "$filters" --reps "$reps" --warmup "$warmup" --point-timeout 60 \
        --deadline "$(($(date +%s) + t - 10))" \
        --out "$work/torch.csv" >> "$work/torch.log" 2>&1
      rc=$?
      [ "$rc" -eq 3 ] && continue
      [ "$rc" -eq 4 ] && notes+=("PyTorch stopped at the time limit on $m")
      [ "$rc" -eq 0 ] || [ "$rc" -eq 4 ] || notes+=("PyTorch exit status $rc on $m (see the log)")
      break
    done
    echo "torch $m: after ${SECONDS}s"
  fi
done

if [ "$dt" = f16 ]; then  # the FP16 bars' other operands, same call, no cuDNN
  run_bench extra_ha --maps "$maps" --filters "$filters" --op bfc --bfc-accum ha --no-cudnn
  big=$(pick_filters 13 9999)
  if [ -n "$big" ]; then
    t=$(left)
    if [ "$t" -ge 20 ]; then
      timeout --signal=INT --kill-after=10 "$t" "$bench" --dtype f32 --op fwd --maps "$maps" --filters "$big" \
        --no-cudnn --reps "$reps" --warmup "$warmup" --out "$work/extra_f32.csv" > "$work/extra_f32.log" 2>&1 ||
        notes+=("FP32 forward for the FP16 bars: exit status $?")
    else
      notes+=("not run (time limit): FP32 forward for the FP16 bars")
    fi
  fi
fi

# Pack: one CSV per source (one header each), every log in one file, then the page.
merge_csv() {  # OUT.csv.gz IN.csv...
  local dst=$1; shift
  [ $# -gt 0 ] || return 0
  { head -n1 "$1"; for f in "$@"; do tail -n +2 "$f"; done; } | gzip -9 > "$dst.tmp" && mv "$dst.tmp" "$dst"
}
shopt -s nullglob
rm -f "$out/$name".*
merge_csv "$out/$name.csv.gz" "$work"/bench_*.csv
[ -f "$work/torch.csv" ] && merge_csv "$out/$name.torch.csv.gz" "$work/torch.csv"
if [ "$dt" = f16 ]; then  # one file, a first column 'run' saying which (ha: backward-filter hybrid accumulation)
  first=1
  for f in "$work"/extra_*.csv; do
    tag=$(basename "$f" .csv)
    [ "$first" = 1 ] && echo "run,$(head -n1 "$f")" && first=0
    tail -n +2 "$f" | sed "s/^/${tag#extra_},/"
  done > "$work/extra.all"
  [ -s "$work/extra.all" ] && gzip -9 < "$work/extra.all" > "$out/$name.extra.csv.gz"
fi
{
  echo "==== settings"; cat "$work/settings.txt"
  for n in "${notes[@]}"; do echo "note: $n"; done
  for f in "$work"/*.log; do echo "==== $(basename "$f")"; cat "$f"; done
} | gzip -9 > "$out/$name.log.gz"

for n in "${notes[@]}"; do echo "note: $n"; done
if ! python3 "$root/bench/dwconv_tables.py" page "$dt" "$out/$name" > "$out/$name.md.tmp"; then
  rm -f "$out/$name.md.tmp"
  echo "dwconv_h200_tables.sh: the page could not be made (the raw files are in $out)" >&2
  exit 1
fi
mv "$out/$name.md.tmp" "$out/$name.md"
echo "page: $out/$name.md (after ${SECONDS}s)"
grep -E '^\| (fwd|bdc|bfc) \||^- ' "$out/$name.md" | grep -vE '^- (Run|Build|Protocol|PyTorch|Raw|This page)'
[ "${#notes[@]}" -eq 0 ]  # the status says whether everything ran
