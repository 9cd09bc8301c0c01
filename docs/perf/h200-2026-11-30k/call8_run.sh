#!/usr/bin/env bash
# Session 11, call 8 (final). Bundle = main d0b9cd4 (ring channels-first, gamma 4 on three blocks, ha whole runs).
# (1) All GPU suites on the final tree; (2) hybrid-accumulation tiles forced against the planner's after the
# whole-run change (the ha tile table was measured on the old kernel): 7x7 3x7 / 1x7, 9x9 3x9 / 1x9, 13x13 1x13,
# 31x31 2x11 / 1x31; (3) source profile of the ring kernel at 7x7 (channels first) on 128x64x64x256 for the next lead.
# Carry: .device/bundle.tar.xz .device/s11_run8.sh .device/fmnist
set -u
L=/tmp/s11logs8; rm -rf $L; mkdir -p $L; trap "tar -C /tmp -czf \$OUT/logs8.tgz s11logs8" EXIT
python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .device/bundle.tar.xz .device
source .device/bundle/env.sh
B=.device/bundle/bin; NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
mkdir -p /usr/share/datasets && ln -sfn $PWD/.device/fmnist /usr/share/datasets/fashion-mnist
mkdir -p /work/main/build/bin && ln -sfn $PWD/$B/cnn-train /work/main/build/bin/cnn-train
export CNN_SOURCE_DIR=$PWD OMP_WAIT_POLICY=passive
SECONDS=0
suite() { timeout 150 $B/${1}_tests --gtest_filter='*Gpu*:*Cuda*:FastDivmod*:DwconvBfcPlan*' > $L/${1}_tests.log 2>&1
  echo "$1 rc=$? ${SECONDS}s $(grep -E '^\[  (PASSED|FAILED)' $L/${1}_tests.log | tr '\n' ' ')"; grep -E "^\[  FAILED|Failure" $L/${1}_tests.log | head -5; }
for t in kernels layers models train; do suite $t; done
run() { local n=$1 tile=$2; shift 2; left=$((250 - SECONDS)); [ $left -lt 10 ] && { echo "skip $n"; return; }
  CNN_DWCONV_BFC_TILE=$tile timeout $left $B/dwconv-bench --dtype f16 --op bfc --bfc-accum ha --no-cudnn --no-check --reps 10 --warmup 2 "$@" --out $L/$n.csv > $L/$n.log 2>&1
  echo "$n rc=$? ${SECONDS}s"; grep -E "^bfc " $L/$n.log | grep -v "F=" | awk '{print $2,$3,$4}' | tr '\n' ';'; echo; }
run ha9_3x9 3x9 --filters 9; run ha9_1x9 1x9 --filters 9
run ha7_3x7 3x7 --filters 7; run ha7_1x7 1x7 --filters 7
run ha13_1x13 1x13 --filters 13
run ha31_2x11 2x11 --filters 31; run ha31_1x31 1x31 --filters 31
if [ $SECONDS -lt 280 ]; then
  timeout 60 $NCU --kernel-name "regex:tc_ring" --launch-skip 1 --launch-count 1 --set full --import-source yes \
    -o $L/ring7 $B/dwconv-bench --no-cudnn --no-check --warmup 1 --reps 2 --dtype f16 --op fwd --maps 128x64x64x256 --filters 7 > $L/ring7_run.log 2>&1
  echo "ring7 rc=$? ${SECONDS}s"
  timeout 40 $NCU --import $L/ring7.ncu-rep --page source --csv --print-source sass 2>/dev/null | gzip > $L/ring7_sass.csv.gz
  timeout 40 $NCU --import $L/ring7.ncu-rep --page details --print-details all > $L/ring7_details.txt 2>&1; rm -f $L/ring7.ncu-rep
fi
echo end ${SECONDS}s
