#!/usr/bin/env bash
# Session 6, call 6. Bundle = main bdb207e (ring kernel at 4 blocks/SM for gamma <= 4). .device/libcnn_occ4.so.xz =
# branch occ4 (4 blocks/SM at every gamma). GPU kernel tests; ring 4 vs 3 blocks at gamma 5/6 (39x39, 47x47); FP32
# forward 13/17 (for FP16 / FP32); FP16 forward / backward-data 7-31 against cuDNN's engines, time-guarded.
set -u
L=/tmp/s6logs6; rm -rf $L; mkdir -p $L; trap "tar -C /tmp -czf \$OUT/logs6.tgz s6logs6" EXIT
python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .device/bundle.tar.xz .device
mkdir -p .device/occ4lib && python3 -c 'import lzma,sys; open(sys.argv[2],"wb").write(lzma.open(sys.argv[1]).read())' .device/libcnn_occ4.so.xz .device/occ4lib/libcnn.so
source .device/bundle/env.sh
B=.device/bundle/bin
SECONDS=0
timeout 100 $B/kernels_tests --gtest_filter='*Gpu*:*Cuda*' > $L/kernels_tests.log 2>&1; echo "kernels rc=$? ${SECONDS}s $(grep -E '^\[  (PASSED|FAILED)' $L/kernels_tests.log | tr '\n' ' ')"
ab() { local n=$1 lib=$2; shift 2
  if [ $lib = occ4 ]; then LD=$PWD/.device/occ4lib:$LD_LIBRARY_PATH; else LD=$LD_LIBRARY_PATH; fi
  LD_LIBRARY_PATH=$LD timeout 60 $B/dwconv-bench "$@" --no-cudnn --no-check --out $L/ab_$n.csv > $L/ab_$n.log 2>&1
  echo "ab $n rc=$? ${SECONDS}s"; grep -E "^(fwd|bdc|bfc) " $L/ab_$n.log | grep -v "F=" | awk '{print $1, $2, $3, $4, $5}'
}
for lib in main occ4; do ab f16_g56_$lib $lib --dtype f16 --op fwd --filters 39,47 --reps 10 --warmup 2; done
ab f32_fwd main --op fwd --filters 13,17 --reps 10 --warmup 2
for F in 7 9 13 17 31; do
  for m in 128x128x128x128 128x64x64x256 128x32x32x1024; do
    left=$((400 - SECONDS)); [ $left -lt 25 ] && { echo "skip $m $F"; continue; }
    timeout $left $B/dwconv-bench --dtype f16 --maps $m --op fwd,bdc --filters $F --cudnn-engines --no-cudnn-legacy --cudnn-probe-budget 2000 --out $L/f16_${m}_$F.csv > $L/f16_${m}_$F.log 2>&1
    echo "f16 $m $F rc=$? ${SECONDS}s"; grep -E "^(fwd|bdc) " $L/f16_${m}_$F.log | grep -v "F=" | cut -c1-110
  done
done
echo end ${SECONDS}s
