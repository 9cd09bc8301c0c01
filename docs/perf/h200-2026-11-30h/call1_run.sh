#!/usr/bin/env bash
# Eighth session, call 1. Bundle = branch tma-cc (main + the TMA-fed CUDA-core
# kernel, forced-only: CNN_DWCONV_F16_PATH=tma, CNN_DWCONV_F32_PATH=tma). GPU suites (kernels first: the TMA kernel's
# tests against FP64 have never run); A/B of the TMA kernel and of the FP16 CUDA-core tile shape (CC_GROUPS) against
# the defaults at 3x3 / 5x5, twice; stride 2: FP16 backward-filter tile vs row-warp kernel; Nsight Compute of the TMA
# kernel at 3x3 (FP16) and 5x5 (FP32).
# Carry: .device/bundle.tar.xz .device/next_s8_run1.sh .device/fmnist
set -u
L=/tmp/s8logs1; rm -rf $L; mkdir -p $L; trap "tar -C /tmp -czf \$OUT/logs1.tgz s8logs1" EXIT
python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .device/bundle.tar.xz .device
source .device/bundle/env.sh
B=.device/bundle/bin
mkdir -p /usr/share/datasets && ln -sfn $PWD/.device/fmnist /usr/share/datasets/fashion-mnist
mkdir -p /work/main/build/bin && ln -sfn $PWD/$B/cnn-train /work/main/build/bin/cnn-train
export CNN_SOURCE_DIR=$PWD OMP_WAIT_POLICY=passive
SECONDS=0
timeout 120 $B/kernels_tests --gtest_filter='*Tma*:*EveryForwardKernel*' > $L/tma_tests.log 2>&1; echo "tma tests rc=$? ${SECONDS}s $(grep -E '^\[  (PASSED|FAILED)' $L/tma_tests.log | tr '\n' ' ')"
grep -E "^\[  FAILED|Failure|error" $L/tma_tests.log | head -8
for t in kernels layers models train; do
  timeout 150 $B/${t}_tests --gtest_filter='*Gpu*:*Cuda*' > $L/${t}_tests.log 2>&1; echo "$t rc=$? ${SECONDS}s $(grep -E '^\[  (PASSED|FAILED)' $L/${t}_tests.log | tr '\n' ' ')"
  grep -E "^\[  FAILED" $L/${t}_tests.log | head -5
done
ab() { local n=$1; shift; left=$((500 - SECONDS)); [ $left -lt 15 ] && { echo "skip $n"; return; }
  timeout $left $B/dwconv-bench "$@" --no-cudnn --no-check --out $L/ab_$n.csv > $L/ab_$n.log 2>&1
  echo "ab $n rc=$? ${SECONDS}s"; grep -E "^(fwd|bdc|bfc) " $L/ab_$n.log | grep -v "F=" | awk '{print $1, $2, $3, $4}' | tr '\n' ';'; echo; }
for rep in 1 2; do
  for m in auto tma; do CNN_DWCONV_F16_PATH=$m ab f16_${m}_$rep --dtype f16 --op fwd,bdc --filters 3,5; done
  for m in auto tma; do CNN_DWCONV_F32_PATH=$m ab f32_${m}_$rep --op fwd,bdc --filters 3,5; done
done
for g in 1 2; do CNN_DWCONV_F16_CC_GROUPS=$g ab cc_$g --dtype f16 --op fwd,bdc --filters 3,5; done
for acc in fp32 ha; do
  for m in auto tile; do CNN_DWCONV_F16_BFC_PATH=$m ab s2bfc_${acc}_$m --dtype f16 --op bfc --bfc-accum $acc --stride 2 --filters 3,5,7,13 --reps 5 --warmup 1; done
done
prof() { local n=$1; shift; left=$((585 - SECONDS)); [ $left -lt 25 ] && { echo "skip $n"; return; }
  OUT=$L timeout $left bash scripts/gpu-profile.sh "$@" > $L/prof_$n.log 2>&1; echo "prof $n rc=$? ${SECONDS}s"; tail -8 $L/prof_$n.log; }
prof tma16_3 tma16_3 dwconv_tma_cc CNN_DWCONV_F16_PATH=tma -- --dtype f16 --op fwd --maps 128x64x64x256 --filters 3
prof tma32_5 tma32_5 dwconv_tma_cc CNN_DWCONV_F32_PATH=tma -- --op fwd --maps 128x64x64x256 --filters 5
echo end ${SECONDS}s
# Call 2: the winners against cuDNN (legacy + engines at 3/5, FP16 and FP32), stride 2 against cuDNN (filters 3,5,7),
# then make the winners the dispatcher's defaults.
