#!/usr/bin/env bash
# Session 10, call 3. Bundle = ring v4 (v3 + channel groups an odd number of 64-byte halves apart in the ring and filter
# buffers). Libs: main (a1551c8), v1 (call 2's ring-stage), v3 (32-bit row offsets: fewer spills at gamma 4).
# GPU tests of v4; ring forward A/B main/v1/v3/v4 twice interleaved; ncu of v4 at 13x13 and 31x31.
set -u
L=/tmp/s10logs3; rm -rf $L; mkdir -p $L; trap "tar -C /tmp -czf \$OUT/logs3.tgz s10logs3" EXIT
python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .device/bundle.tar.xz .device
source .device/bundle/env.sh
B=.device/bundle/bin; NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
for v in main10 ringstage v3; do mkdir -p .device/lib_$v && xz -dc .device/libcnn_$v.so.xz > .device/lib_$v/libcnn.so; done
SECONDS=0
timeout 150 $B/kernels_tests --gtest_filter='*Gpu*:*Cuda*:FastDivmod*:DwconvBfcPlan*' > $L/kernels_tests.log 2>&1
echo "kernels rc=$? ${SECONDS}s $(grep -E '^\[  (PASSED|FAILED)' $L/kernels_tests.log | tr '\n' ' ')"; grep -E "^\[  FAILED" $L/kernels_tests.log | head
run() { local n=$1 lib=$2; shift 2; left=$((540 - SECONDS)); [ $left -lt 15 ] && { echo "skip $n"; return; }
  if [ $lib = v4 ]; then pre=env; else pre="env LD_LIBRARY_PATH=$PWD/.device/lib_$lib:${LD_LIBRARY_PATH:-}"; fi
  timeout $left $pre $B/dwconv-bench "$@" --out $L/$n.csv > $L/$n.log 2>&1
  echo "$n rc=$? ${SECONDS}s"; grep -E "^(fwd|bdc|bfc) " $L/$n.log | grep -v "F=" | awk '{print $3,$4}' | tr '\n' ';'; echo; }
for rep in 1 2; do for lib in main10 ringstage v3 v4; do
  run ab_${lib}_$rep $lib --dtype f16 --op fwd --filters 7,9,13,17,31,51 --no-cudnn --no-check; done; done
prof() { local n=$1 f=$2
  timeout 100 $NCU --kernel-name "regex:tc_ring" --launch-skip 1 --launch-count 1 --set full --import-source yes \
    -o $L/$n $B/dwconv-bench --no-cudnn --no-check --warmup 1 --reps 2 --dtype f16 --op fwd --maps 128x64x64x256 --filters $f > $L/${n}_run.log 2>&1
  echo "ncu $n rc=$? ${SECONDS}s"
  timeout 60 $NCU --import $L/$n.ncu-rep --page source --csv --print-source sass > $L/${n}_sass.csv 2>&1
  timeout 60 $NCU --import $L/$n.ncu-rep --page details --print-details all > $L/${n}_details.txt 2>&1
  grep -E "^ +Duration|Issue Slots Busy|L1/TEX Cache Throughput|L1 Wavefronts Shared Excessive  " $L/${n}_details.txt | head -4; }
prof v4_13 13; prof v4_31 31
echo end ${SECONDS}s
