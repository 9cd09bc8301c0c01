#!/usr/bin/env bash
# Session 6, call 5. Bundle = branch occ4 (main a5a38ba + ring kernel at 4 blocks/SM + GEMV TM=16 at 3 blocks/SM);
# .device/libcnn_main.so.xz = main a5a38ba. GPU kernel tests, then A/B without cuDNN / FP64 check, interleaved twice:
# FP16 forward 7-51 (ring kernel) and FP32 forward 7-17 (GEMV), new vs main.
set -u
L=/tmp/s6logs5; rm -rf $L; mkdir -p $L; trap "tar -C /tmp -czf \$OUT/logs5.tgz s6logs5" EXIT
python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .device/bundle.tar.xz .device
mkdir -p .device/mainlib && python3 -c 'import lzma,sys; open(sys.argv[2],"wb").write(lzma.open(sys.argv[1]).read())' .device/libcnn_main.so.xz .device/mainlib/libcnn.so
source .device/bundle/env.sh
B=.device/bundle/bin
SECONDS=0
timeout 100 $B/kernels_tests --gtest_filter='*Gpu*:*Cuda*' > $L/kernels_tests.log 2>&1; echo "kernels rc=$? ${SECONDS}s $(grep -E '^\[  (PASSED|FAILED)' $L/kernels_tests.log | tr '\n' ' ')"
grep -E "^\[  FAILED" $L/kernels_tests.log | head
ab() { # name, lib (new|main), args...
  local n=$1 lib=$2; shift 2
  if [ $lib = main ]; then LD=$PWD/.device/mainlib:$LD_LIBRARY_PATH; else LD=$LD_LIBRARY_PATH; fi
  LD_LIBRARY_PATH=$LD timeout 60 $B/dwconv-bench "$@" --no-cudnn --no-check --out $L/ab_$n.csv > $L/ab_$n.log 2>&1
  echo "ab $n rc=$? ${SECONDS}s"; grep -E "^(fwd|bdc|bfc) " $L/ab_$n.log | grep -v "F=" | awk '{print $1, $2, $3, $4, $5, $9, $10}'
}
for rep in 1 2; do
  for lib in new main; do
    ab f16_${lib}_$rep $lib --dtype f16 --op fwd --filters 7,9,13,17,31,51 --reps 10 --warmup 2
    ab f32_${lib}_$rep $lib --op fwd --filters 7,9,13,17 --reps 10 --warmup 2
  done
done
echo end ${SECONDS}s
