#!/usr/bin/env bash
# Session 6, call 2. Bundle = branch s6c2 (main + cc-cpt4 + bfc-stage); .device/libcnn_oldbfc.so.xz = the same tree
# without bfc-stage (the FP32 backward-filter staging as on main). GPU kernel tests, SASS of the new tile kernel,
# FP32 bfc new vs old staging (interleaved, no cuDNN), then new staging against cuDNN (legacy + engines) at 3x3 / 5x5,
# FP16 CUDA-core channels per thread 8 vs 4, bfc tiles at 13 / 31 with the new staging, ncu of the new bfc 3x3.
set -u
L=/tmp/s6logs2; rm -rf $L; mkdir -p $L; trap "tar -C /tmp -czf \$OUT/logs2.tgz s6logs2" EXIT
python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .device/bundle.tar.xz .device
mkdir -p .device/oldlib && python3 -c 'import lzma,sys; open(sys.argv[2],"wb").write(lzma.open(sys.argv[1]).read())' .device/libcnn_oldbfc.so.xz .device/oldlib/libcnn.so
source .device/bundle/env.sh
B=.device/bundle/bin
SECONDS=0
timeout 120 $B/kernels_tests --gtest_filter='*Gpu*:*Cuda*' > $L/kernels_tests.log 2>&1; echo "kernels rc=$? ${SECONDS}s $(grep -E '^\[  (PASSED|FAILED)' $L/kernels_tests.log | tr '\n' ' ')"
grep -E "^\[  FAILED" $L/kernels_tests.log | head
cuobjdump --dump-sass -fun '_ZN3cnn6dwconv3bfc15bfc_tile_kernelILi3ELi3EEEvNS1_8TileArgsE' .device/bundle/lib/libcnn.so > $L/sass_bfc33_new.txt 2>&1
cuobjdump --dump-sass -fun '_ZN3cnn6dwconv3bfc15bfc_tile_kernelILi3ELi3EEEvNS1_8TileArgsE' .device/oldlib/libcnn.so > $L/sass_bfc33_old.txt 2>&1
echo "sass lines new $(wc -l < $L/sass_bfc33_new.txt) old $(wc -l < $L/sass_bfc33_old.txt)"
ab() { # name, lib dir (new|old), args...
  local n=$1 lib=$2; shift 2
  if [ $lib = old ]; then LD=$PWD/.device/oldlib:$LD_LIBRARY_PATH; else LD=$LD_LIBRARY_PATH; fi
  LD_LIBRARY_PATH=$LD timeout 60 $B/dwconv-bench "$@" --no-cudnn --no-check --out $L/ab_$n.csv > $L/ab_$n.log 2>&1
  echo "ab $n rc=$? ${SECONDS}s"; grep -E "^(fwd|bdc|bfc) " $L/ab_$n.log | grep -v "F="
}
for rep in 1 2; do
  for lib in new old; do ab bfc_${lib}_$rep $lib --op bfc --filters 3,5,7,9,13,17,31 --reps 10 --warmup 2; done
done
for rep in 1 2; do
  for cpt in 8 4; do CNN_DWCONV_F16_CC_CPT=$cpt ab cc_cpt${cpt}_$rep new --dtype f16 --op fwd,bdc --filters 3,5; done
done
bt() { local f=$1; shift; for t in "$@"; do CNN_DWCONV_F32_BFC_TILE=$t ab bfc${f}_$t new --op bfc --filters $f --reps 5 --warmup 1; done; }
bt 13 1x13 2x13
bt 31 1x31 2x16
bt 3 3x3 1x3
# New staging against cuDNN (legacy algorithms + backend engines, each candidate checked against FP64) at 3x3 / 5x5.
left=$((480 - SECONDS))
[ $left -gt 30 ] && { timeout $left $B/dwconv-bench --op bfc --filters 3,5 --cudnn-engines --cudnn-probe-budget 4000 --out $L/bfc35_cudnn.csv > $L/bfc35_cudnn.log 2>&1; echo "bfc35 vs cudnn rc=$? ${SECONDS}s"; grep -E "^(bfc |summary)" $L/bfc35_cudnn.log; }
left=$((575 - SECONDS))
[ $left -gt 20 ] && { OUT=$L timeout $left bash scripts/gpu-profile.sh bfc3new bfc_tile -- --op bfc --maps 128x64x64x256 --filters 3 > $L/prof_bfc3new.log 2>&1; echo "prof rc=$? ${SECONDS}s"; tail -12 $L/prof_bfc3new.log; }
echo end ${SECONDS}s
