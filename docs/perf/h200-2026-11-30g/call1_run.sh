#!/usr/bin/env bash
# DRAFT for the seventh session, call 1 (prepared in the sixth). Build the bundle from branch s7cand (main + cc-pipe +
# bfc-f16tile; every new path is forced-only: CNN_DWCONV_F16_CC_LOADS=pipelined, CNN_DWCONV_F32_PATH=pipe,
# CNN_DWCONV_F16_BFC_PATH=tile). GPU kernel tests (each new path against FP64 / the ha emulation), then A/B without
# cuDNN at the points they target, twice, then Nsight Compute of the new kernels.
# Carry: .device/bundle.tar.xz .device/next_s7_run1.sh
set -u
L=/tmp/s7logs1; rm -rf $L; mkdir -p $L; trap "tar -C /tmp -czf \$OUT/logs1.tgz s7logs1" EXIT
python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .device/bundle.tar.xz .device
source .device/bundle/env.sh
B=.device/bundle/bin
SECONDS=0
timeout 150 $B/kernels_tests --gtest_filter='*Gpu*:*Cuda*' > $L/kernels_tests.log 2>&1; echo "kernels rc=$? ${SECONDS}s $(grep -E '^\[  (PASSED|FAILED)' $L/kernels_tests.log | tr '\n' ' ')"
grep -E "^\[  FAILED|Failure" $L/kernels_tests.log | head
ab() { local n=$1; shift; timeout 90 $B/dwconv-bench "$@" --no-cudnn --no-check --out $L/ab_$n.csv > $L/ab_$n.log 2>&1
  echo "ab $n rc=$? ${SECONDS}s"; grep -E "^(fwd|bdc|bfc) " $L/ab_$n.log | grep -v "F=" | awk '{print $1, $2, $3, $4, $5, $10}'; }
for rep in 1 2; do
  for m in registers pipelined; do CNN_DWCONV_F16_CC_LOADS=$m ab f16cc_${m}_$rep --dtype f16 --op fwd,bdc --filters 3,5; done
  for m in auto pipe; do CNN_DWCONV_F32_PATH=$m ab f32_${m}_$rep --op fwd,bdc --filters 3,5; done
done
for acc in fp32 ha; do
  for m in tiled tile; do CNN_DWCONV_F16_BFC_PATH=$m ab bfc16_${acc}_$m --dtype f16 --op bfc --bfc-accum $acc --filters 3,5,7,9,13,17,31,51 --reps 5 --warmup 1; done
done
prof() { local n=$1; shift; left=$((560 - SECONDS)); [ $left -lt 25 ] && { echo "skip $n"; return; }
  OUT=$L timeout $left bash scripts/gpu-profile.sh "$@" > $L/prof_$n.log 2>&1; echo "prof $n rc=$? ${SECONDS}s"; tail -8 $L/prof_$n.log; }
prof pipe16_3 pipe16_3 dwconv_cc_pipe CNN_DWCONV_F16_CC_LOADS=pipelined -- --dtype f16 --op fwd --maps 128x64x64x256 --filters 3
prof pipe32_5 pipe32_5 dwconv_cc_pipe CNN_DWCONV_F32_PATH=pipe -- --op fwd --maps 128x64x64x256 --filters 5
prof bfc16t_17 bfc16t_17 bfc_tile CNN_DWCONV_F16_BFC_PATH=tile -- --dtype f16 --op bfc --maps 128x32x32x1024 --filters 17
echo end ${SECONDS}s
# Next calls: the winners against cuDNN (legacy + engines at 3/5, engines at 7-51; the bfc winners in both
# accumulation modes), then make them the dispatcher's defaults and drop the losers.
