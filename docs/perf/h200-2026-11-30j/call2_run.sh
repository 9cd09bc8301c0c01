#!/usr/bin/env bash
# Session 10, call 2. Bundle = branch ring-stage (ring kernel staging with per-tile job offsets; ha 17x17 narrow rule).
# Baseline lib = main (a1551c8). GPU tests of the branch; ring forward/backward-data A/B (main vs new, twice,
# interleaved); FP32 forward 13/17 for the FP16 >= 2x FP32 bar; ha 17x17 default over seven widths; ncu source page
# of the new ring kernel at 13x13.
set -u
L=/tmp/s10logs2; rm -rf $L; mkdir -p $L; trap "tar -C /tmp -czf \$OUT/logs2.tgz s10logs2" EXIT
python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .device/bundle.tar.xz .device
source .device/bundle/env.sh
B=.device/bundle/bin; NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
mkdir -p .device/libmain && xz -dc .device/libcnn_main10.so.xz > .device/libmain/libcnn.so
SECONDS=0
timeout 150 $B/kernels_tests --gtest_filter='*Gpu*:*Cuda*:FastDivmod*:DwconvBfcPlan*' > $L/kernels_tests.log 2>&1
echo "kernels rc=$? ${SECONDS}s $(grep -E '^\[  (PASSED|FAILED)' $L/kernels_tests.log | tr '\n' ' ')"; grep -E "^\[  FAILED" $L/kernels_tests.log | head
run() { local n=$1 lib=$2; shift 2; left=$((560 - SECONDS)); [ $left -lt 15 ] && { echo "skip $n"; return; }
  if [ $lib = main ]; then pre="env LD_LIBRARY_PATH=$PWD/.device/libmain:${LD_LIBRARY_PATH:-}"; else pre=env; fi
  timeout $left $pre $B/dwconv-bench "$@" --out $L/$n.csv > $L/$n.log 2>&1
  echo "$n rc=$? ${SECONDS}s"; grep -E "^(fwd|bdc|bfc) " $L/$n.log | grep -v "F=" | awk '{print $1,$2,$3,$4}' | tr '\n' ';'; echo; }
for rep in 1 2; do for lib in main new; do
  run ab_ring_${lib}_$rep $lib --dtype f16 --op fwd,bdc --filters 7,9,13,17,31,51 --no-cudnn --no-check; done; done
run f32_13_17 new --dtype f32 --op fwd --filters 13,17 --no-cudnn --no-check
M=128x16x16x2048,128x24x24x1024,128x32x32x1024,128x48x48x512,128x64x64x256,128x96x96x128,128x128x128x128
run ha17_auto new --dtype f16 --op bfc --bfc-accum ha --filters 17 --maps $M --no-cudnn --no-check --reps 5 --warmup 1
run ha17_check new --dtype f16 --op bfc --bfc-accum ha --filters 17 --maps 128x32x32x1024 --no-cudnn --reps 5 --warmup 1
timeout 120 $NCU --kernel-name "regex:tc_ring" --launch-skip 1 --launch-count 1 --set full --import-source yes \
  -o $L/ring16_13n $B/dwconv-bench --no-cudnn --no-check --warmup 1 --reps 2 --dtype f16 --op fwd --maps 128x64x64x256 --filters 13 > $L/ncu_run.log 2>&1
echo "ncu rc=$? ${SECONDS}s"
timeout 60 $NCU --import $L/ring16_13n.ncu-rep --page source --csv --print-source sass > $L/ring16_13n_sass.csv 2>&1
timeout 60 $NCU --import $L/ring16_13n.ncu-rep --page details --print-details all > $L/ring16_13n_details.txt 2>&1
grep -E "Duration|Registers Per|Executed Instructions  |Issue Slots Busy" $L/ring16_13n_details.txt | head
echo end ${SECONDS}s
