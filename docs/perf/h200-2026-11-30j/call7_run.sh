#!/usr/bin/env bash
# Session 10, call 7. Bundle = branch ring-epi (ring epilogue: swizzle as a function of row and column, store
# addresses from one per-lane base; read-back stepping one pointer). Lib v4 = main 826a90c. FP16 GPU tests (the ring
# kernel against FP64 on every gamma, q = 1, 2, 4, odd heights); ring forward A/B main vs epi, twice.
set -u
L=/tmp/s10logs7; rm -rf $L; mkdir -p $L; trap "tar -C /tmp -czf \$OUT/logs7.tgz s10logs7" EXIT
python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .device/bundle.tar.xz .device
source .device/bundle/env.sh
B=.device/bundle/bin
mkdir -p .device/lib_v4 && xz -dc .device/libcnn_v4.so.xz > .device/lib_v4/libcnn.so
SECONDS=0
timeout 90 $B/kernels_tests --gtest_filter='*Fp16Gpu*' > $L/kernels_tests.log 2>&1
echo "kernels rc=$? ${SECONDS}s $(grep -E '^\[  (PASSED|FAILED)' $L/kernels_tests.log | tr '\n' ' ')"; grep -E "^\[  FAILED" $L/kernels_tests.log | head
run() { local n=$1 lib=$2; shift 2; left=$((175 - SECONDS)); [ $left -lt 10 ] && { echo "skip $n"; return; }
  if [ $lib = epi ]; then pre=env; else pre="env LD_LIBRARY_PATH=$PWD/.device/lib_$lib:${LD_LIBRARY_PATH:-}"; fi
  timeout $left $pre $B/dwconv-bench "$@" --out $L/$n.csv > $L/$n.log 2>&1
  echo "$n rc=$? ${SECONDS}s"; grep -E "^(fwd|bdc|bfc) " $L/$n.log | grep -v "F=" | awk '{print $3,$4}' | tr '\n' ';'; echo; }
for rep in 1 2; do for lib in v4 epi; do
  run ab_${lib}_$rep $lib --dtype f16 --op fwd --filters 7,9,13,17,31,51 --no-cudnn --no-check --reps 10 --warmup 2; done; done
run chk_epi epi --dtype f16 --op bdc --filters 7,13 --maps 128x32x32x1024 --no-cudnn --reps 3 --warmup 1
echo end ${SECONDS}s
