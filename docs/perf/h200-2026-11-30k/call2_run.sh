#!/usr/bin/env bash
# Session 11, call 2. Bundle = working tree with the ring kernel's streaming blocks (strip of tiles down a column).
# (1) FP16 GPU kernel tests (streaming strips of 2 and whole columns against FP64); (2) forward/backward-data A/B
# CNN_DWCONV_F16_RING_STREAM=off vs auto at 7, 9, 13, 17 on the three maps, twice, interleaved; one checked run;
# (3) source profile of the streaming kernel at 7x7 on 128x64x64x256.
# Expected before measuring: 7x7 1.2-1.4x on 128x64x64x256 and 128^4, 1.05-1.15x on 128x32x32x1024 (two tiles per
# column); 9x9 / 13x13 (three blocks per SM there, shared memory) uncertain; 17x17 1.0-1.1x.
set -u
L=/tmp/s11logs2; rm -rf $L; mkdir -p $L; trap "tar -C /tmp -czf \$OUT/logs2.tgz s11logs2" EXIT
python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .device/bundle.tar.xz .device
source .device/bundle/env.sh
B=.device/bundle/bin; NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
SECONDS=0
timeout 120 $B/kernels_tests --gtest_filter='*Fp16Gpu*' > $L/tests_f16.log 2>&1
echo "tests rc=$? ${SECONDS}s $(grep -E '^\[  (PASSED|FAILED)' $L/tests_f16.log | tr '\n' ' ')"; grep -E "^\[  FAILED|Failure|error" $L/tests_f16.log | head -8
run() { local n=$1 mode=$2; shift 2; left=$((480 - SECONDS)); [ $left -lt 15 ] && { echo "skip $n"; return; }
  CNN_DWCONV_F16_RING_STREAM=$mode timeout $left $B/dwconv-bench "$@" --out $L/$n.csv > $L/$n.log 2>&1
  echo "$n rc=$? ${SECONDS}s"; grep -E "^(fwd|bdc|bfc) " $L/$n.log | grep -v "F=" | awk '{print $1,$3,$4}' | tr '\n' ';'; echo; }
run check_auto auto --dtype f16 --op fwd,bdc --filters 7,9,13,17 --no-cudnn --reps 3 --warmup 1
grep -m3 "strip\|path" $L/check_auto.log | head -3
for rep in 1 2; do for mode in off auto; do
  run ab_${mode}_$rep $mode --dtype f16 --op fwd,bdc --filters 7,9,13,17 --no-cudnn --no-check --reps 10 --warmup 2; done; done
sass() { local n=$1 k=$2; shift 2
  timeout 120 $NCU --kernel-name "regex:$k" --launch-skip 1 --launch-count 1 --set full --import-source yes \
    -o $L/$n $B/dwconv-bench --no-cudnn --no-check --warmup 1 --reps 2 "$@" > $L/${n}_run.log 2>&1
  echo "$n rc=$? ${SECONDS}s"; tail -1 $L/${n}_run.log
  timeout 60 $NCU --import $L/$n.ncu-rep --page source --csv --print-source sass > $L/${n}_sass.csv 2> $L/${n}_sass.err
  gzip $L/${n}_sass.csv
  timeout 60 $NCU --import $L/$n.ncu-rep --page details --print-details all > $L/${n}_details.txt 2>&1; rm -f $L/$n.ncu-rep; }
[ $SECONDS -lt 500 ] && sass stream7_64 tc_ring_stream --dtype f16 --op fwd --maps 128x64x64x256 --filters 7
ls $L | head -50
echo end ${SECONDS}s
