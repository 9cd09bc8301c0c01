#!/usr/bin/env bash
# Ninth session, call 2. Three builds of the TMA kernel by library swap on one bundle: main (78d4dfe), lean (tile
# digits stepped by add-and-carry instead of four divisions per thread and tile; FP16 3x3 8-byte lanes no longer
# spill) and empty (lean + per-stage empty mbarriers instead of a block barrier per tile; the bundle's own lib).
# TMA GPU tests of lean and empty; A/B of the three (FP16 3x3/5x5, FP32 5x5) twice, interleaved; Nsight Compute of
# the FP16 3x3 winner; the winner against cuDNN (legacy + engines) at FP16 3x3 on the three maps.
# Expected: lean 1.03-1.08x at FP16 3x3 (~100 of ~805 instructions per thread and tile row gone), 1.01-1.03x at 5x5.
# Carry: .device/bundle.tar.xz .device/s9run2.sh .device/libcnn_main.so.xz .device/libcnn_lean.so.xz
set -u
L=/tmp/s9logs2; rm -rf $L; mkdir -p $L; trap "tar -C /tmp -czf \$OUT/logs2.tgz s9logs2" EXIT
python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .device/bundle.tar.xz .device
source .device/bundle/env.sh
for v in main lean; do mkdir -p .device/v_$v && cp -r .device/bundle .device/v_$v/ && xz -dc .device/libcnn_$v.so.xz > .device/v_$v/bundle/lib/libcnn.so; done
mkdir -p .device/v_empty && ln -sfn $PWD/.device/bundle .device/v_empty/bundle
md5sum .device/v_*/bundle/lib/libcnn.so
SECONDS=0
run() { local v=$1; shift; LD_LIBRARY_PATH=$PWD/.device/v_$v/bundle/lib:$LD_LIBRARY_PATH "$@"; }
for v in lean empty; do
  run $v timeout 100 .device/v_$v/bundle/bin/kernels_tests --gtest_filter='*Tma*:*EveryForwardKernel*:*ForwardPath*:*AwkwardShapes*:*LargerShapes*' > $L/tests_$v.log 2>&1
  echo "tests $v rc=$? ${SECONDS}s $(grep -E '^\[  (PASSED|FAILED)' $L/tests_$v.log | tr '\n' ' ')"; grep -E "^\[  FAILED|Failure" $L/tests_$v.log | head -5
done
ab() { local v=$1 n=$2; shift 2; left=$((330 - SECONDS)); [ $left -lt 15 ] && { echo "skip $n"; return; }
  run $v timeout $left .device/v_$v/bundle/bin/dwconv-bench "$@" --no-cudnn --no-check --out $L/ab_$n.csv > $L/ab_$n.log 2>&1
  echo "ab $n rc=$? ${SECONDS}s"; awk -F, 'NR > 1 { printf "%s %s %s %.4f;", $1, $2, $3, $4 }' $L/ab_$n.csv; echo; }
for rep in 1 2; do
  for v in main lean empty; do ab $v f16_${v}_$rep --dtype f16 --op fwd,bdc --filters 3,5; ab $v f32_${v}_$rep --op fwd,bdc --filters 5; done
done
total() { awk -F, 'NR > 1 && $3 == 3 { s += $4 } END { printf "%.4f", s }' "$@"; }
best=main; bt=$(total $L/ab_f16_main_*.csv)
for v in lean empty; do t=$(total $L/ab_f16_${v}_*.csv); echo "f16 3x3 sum ms $v $t (main $(total $L/ab_f16_main_*.csv))"
  awk -v a=$t -v b=$bt 'BEGIN { exit !(a < b) }' && { best=$v; bt=$t; }; done
echo "best $best"
(LD_LIBRARY_PATH=$PWD/.device/v_$best/bundle/lib:$LD_LIBRARY_PATH OUT=$L timeout 60 bash scripts/gpu-profile.sh ${best}16_3 dwconv_tma_cc -- --dtype f16 --op fwd --maps 128x64x64x256 --filters 3 > $L/prof_${best}16_3.log 2>&1)
echo "prof rc=$? ${SECONDS}s"; grep -E "Duration|Issue Slots|L2 Cache Th|DRAM Th|Executed Instructions  |Registers Per|Achieved Occ" $L/ncu_${best}16_3.txt | head -8
for m in 128x32x32x1024 128x64x64x256 128x128x128x128; do left=$((585 - SECONDS)); [ $left -lt 40 ] && break
  run $best timeout $left .device/v_$best/bundle/bin/dwconv-bench --dtype f16 --op fwd,bdc --maps $m --filters 3 --cudnn-engines --cudnn-probe-budget 2000 --out $L/cu_$m.csv > $L/cu_$m.log 2>&1
  echo "cu $m rc=$? ${SECONDS}s"; grep -E "^(fwd |bdc |summary)" $L/cu_$m.log
done
echo end ${SECONDS}s
