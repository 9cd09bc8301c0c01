#!/usr/bin/env bash
# Ninth session, call 5. Bundle = branch tma-empty2 (main 7e0a12e + per-stage empty mbarriers: each warp arrives
# when done with a stage and thread 0 waits for all of them before the next TMA load into it, instead of a block
# barrier per tile). Against main's lib by library swap. Why: Nsight Compute (call 3) shows FP16 3x3 warps stalled on
# short scoreboard 1.57 and not-selected 1.74 per issue at 58% issue-busy - bursts where every warp of a block leaves
# the barrier together, then waits together. Expected: up to ~5% at FP16 3x3 if the convoys cost that; call 2's
# version on another base ran 0.97-1.00x. TMA tests; A/B twice; ncu of empty2 at FP16 3x3 with stall metrics.
# Carry: .device/bundle.tar.xz .device/s9run5.sh .device/libcnn_main.so.xz
set -u
L=/tmp/s9logs5; rm -rf $L; mkdir -p $L; trap "tar -C /tmp -czf \$OUT/logs5.tgz s9logs5" EXIT
python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .device/bundle.tar.xz .device
source .device/bundle/env.sh
mkdir -p .device/v_main && cp -r .device/bundle .device/v_main/ && xz -dc .device/libcnn_main.so.xz > .device/v_main/bundle/lib/libcnn.so
mkdir -p .device/v_empty2 && ln -sfn $PWD/.device/bundle .device/v_empty2/bundle
md5sum .device/v_*/bundle/lib/libcnn.so
SECONDS=0
run() { local v=$1; shift; LD_LIBRARY_PATH=$PWD/.device/v_$v/bundle/lib:$LD_LIBRARY_PATH "$@"; }
timeout 100 .device/bundle/bin/kernels_tests --gtest_filter='*Tma*:*EveryForwardKernel*:*ForwardPath*:*AwkwardShapes*:*LargerShapes*' > $L/tests_empty2.log 2>&1
echo "tests empty2 rc=$? ${SECONDS}s $(grep -E '^\[  (PASSED|FAILED)' $L/tests_empty2.log | tr '\n' ' ')"; grep -E "^\[  FAILED|Failure" $L/tests_empty2.log | head -5
ab() { local v=$1 n=$2; shift 2; left=$((200 - SECONDS)); [ $left -lt 15 ] && { echo "skip $n"; return; }
  run $v timeout $left .device/v_$v/bundle/bin/dwconv-bench "$@" --no-cudnn --no-check --out $L/ab_$n.csv > $L/ab_$n.log 2>&1
  echo "ab $n rc=$? ${SECONDS}s"; awk -F, 'NR > 1 { printf "%s %s %s %.4f;", $1, $2, $3, $4 }' $L/ab_$n.csv; echo; }
for rep in 1 2; do
  for v in main empty2; do ab $v f16_${v}_$rep --dtype f16 --op fwd,bdc --filters 3,5; ab $v f32_${v}_$rep --op fwd,bdc --filters 5; done
done
(OUT=$L timeout 60 bash scripts/gpu-profile.sh empty2_16_3 dwconv_tma_cc -- --dtype f16 --op fwd --maps 128x64x64x256 --filters 3 > $L/prof_empty2_16_3.log 2>&1)
echo "prof rc=$? ${SECONDS}s"; grep -E "Duration|Issue Slots|L2 Cache Th|DRAM Th|Executed Instructions  |Achieved Occ|issue_stalled" $L/ncu_empty2_16_3.txt | awk '$NF+0 > 0.05 || !/issue_stalled/' | head -20
echo end ${SECONDS}s
