#!/usr/bin/env bash
# Session 12, call 6. Bundle = main 1829145 (s12e). Lib g1b5 = main + the ring kernel at gamma 1 (FW <= 8) compiled
# for five blocks per SM (96 registers, 8 bytes of spills; four: 122 registers).
# Expected before measuring: 7x7 forward / backward-data 1.05-1.15x if the row loop's cp.async waits (a third of the
# stall samples at 7x7, eleventh session) are hidden by 20 warps per SM instead of 16; the spills may eat part.
# (1) FP16 GPU tests under g1b5; (2) 7x7 A/B main vs g1b5, twice; (3) 7x7 against cuDNN per map under g1b5.
# Carry: .device/bundle.tar.xz .device/s12_run6.sh .device/libcnn_g1b5.so.xz
set -u
L=/tmp/s12logs6; rm -rf $L; mkdir -p $L; trap "tar -C /tmp -czf \$OUT/logs6.tgz s12logs6" EXIT
python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .device/bundle.tar.xz .device
source .device/bundle/env.sh
B=.device/bundle/bin
mkdir -p .device/lib_g1b5 && xz -dc .device/libcnn_g1b5.so.xz > .device/lib_g1b5/libcnn.so
G="env LD_LIBRARY_PATH=$PWD/.device/lib_g1b5:${LD_LIBRARY_PATH:-}"
SECONDS=0
timeout 120 $G $B/kernels_tests --gtest_filter='*Fp16Gpu*' > $L/tests_g1b5.log 2>&1
echo "tests g1b5 rc=$? ${SECONDS}s $(grep -E '^\[  (PASSED|FAILED)' $L/tests_g1b5.log | tr '\n' ' ')"; grep -E "^\[  FAILED|Failure" $L/tests_g1b5.log | head -5
run() { local n=$1; shift; left=$((150 - SECONDS)); [ $left -lt 10 ] && { echo "skip $n"; return; }
  timeout $left "$@" --no-cudnn --no-check --reps 10 --warmup 2 --out $L/$n.csv > $L/$n.log 2>&1
  echo "$n rc=$? ${SECONDS}s"; grep -E "^(fwd|bdc|bfc) " $L/$n.log | grep -v "F=" | awk '{print $1,$2,$3,$4}' | tr '\n' ';'; echo; }
F16="$B/dwconv-bench --dtype f16 --op fwd,bdc --filters 7"
for rep in 1 2; do run main_$rep $F16; run g1b5_$rep $G $F16; done
for m in 128x32x32x1024 128x64x64x256 128x128x128x128; do left=$((265 - SECONDS)); [ $left -lt 30 ] && break
  timeout $left $G $B/dwconv-bench --dtype f16 --op fwd,bdc --maps $m --filters 7 --cudnn-engines --cudnn-probe-budget 2000 --out $L/cu_${m}_7.csv > $L/cu_${m}_7.log 2>&1
  echo "cu $m F=7 rc=$? ${SECONDS}s"; grep -E "^(fwd |bdc )" $L/cu_${m}_7.log | cut -c1-160
done
echo end ${SECONDS}s
