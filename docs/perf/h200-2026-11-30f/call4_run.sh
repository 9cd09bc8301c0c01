#!/usr/bin/env bash
# Session 6, call 4. Bundle = branch s6c4 (main a5a38ba + gemv-prologue + cc-smem); .device/libcnn_main.so.xz = main.
# GPU kernel tests; A/B (no cuDNN, no FP64 check): FP16 CUDA-core registers vs staged (CNN_DWCONV_F16_CC_LOADS) at
# 3x3/5x5, FP32 GEMV new prologue vs main's (library swap) at 5-13; then each winner against cuDNN legacy + engines.
set -u
L=/tmp/s6logs4; rm -rf $L; mkdir -p $L; trap "tar -C /tmp -czf \$OUT/logs4.tgz s6logs4" EXIT
python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .device/bundle.tar.xz .device
mkdir -p .device/mainlib && python3 -c 'import lzma,sys; open(sys.argv[2],"wb").write(lzma.open(sys.argv[1]).read())' .device/libcnn_main.so.xz .device/mainlib/libcnn.so
source .device/bundle/env.sh
B=.device/bundle/bin
SECONDS=0
timeout 120 $B/kernels_tests --gtest_filter='*Gpu*:*Cuda*' > $L/kernels_tests.log 2>&1; echo "kernels rc=$? ${SECONDS}s $(grep -E '^\[  (PASSED|FAILED)' $L/kernels_tests.log | tr '\n' ' ')"
grep -E "^\[  FAILED|Failure" $L/kernels_tests.log | head
ab() { # name, lib (new|main), args...
  local n=$1 lib=$2; shift 2
  if [ $lib = main ]; then LD=$PWD/.device/mainlib:$LD_LIBRARY_PATH; else LD=$LD_LIBRARY_PATH; fi
  LD_LIBRARY_PATH=$LD timeout 60 $B/dwconv-bench "$@" --no-cudnn --no-check --out $L/ab_$n.csv > $L/ab_$n.log 2>&1
  echo "ab $n rc=$? ${SECONDS}s"; grep -E "^(fwd|bdc|bfc) " $L/ab_$n.log | grep -v "F=" | awk '{print $1, $2, $3, $4, $5, $9, $10}'
}
for rep in 1 2; do
  for m in registers staged; do CNN_DWCONV_F16_CC_LOADS=$m ab cc_${m}_$rep new --dtype f16 --op fwd,bdc --filters 3,5; done
  for lib in new main; do ab gemv_${lib}_$rep $lib --op fwd,bdc --filters 5,7,9,13; done
done
win=$(python3 - $L <<'PY'
import csv, glob, sys
def tot(pat):
    return sum(min(float(r['ms']) for r in rows) for rows in [[r for f in glob.glob(sys.argv[1] + pat) for r in csv.DictReader(open(f)) if (r['op'], r['map'], r['filter']) == k] for k in set((r['op'], r['map'], r['filter']) for f in glob.glob(sys.argv[1] + pat) for r in csv.DictReader(open(f)))])
print('staged' if tot('/ab_cc_staged_*.csv') < tot('/ab_cc_registers_*.csv') else 'registers',
      'new' if tot('/ab_gemv_new_*.csv') < tot('/ab_gemv_main_*.csv') else 'main')
PY
)
echo "winners: $win"
set -- $win
for m in 128x128x128x128 128x64x64x256 128x32x32x1024; do
  left=$((560 - SECONDS)); [ $left -lt 30 ] && { echo "skip f16 $m"; continue; }
  CNN_DWCONV_F16_CC_LOADS=$1 timeout $left $B/dwconv-bench --dtype f16 --maps $m --op fwd,bdc --filters 3,5 --cudnn-engines --cudnn-probe-budget 3000 --out $L/f16_${m}_cc_$1.csv > $L/f16_${m}_cc.log 2>&1
  echo "f16 $m rc=$? ${SECONDS}s"; grep -E "^(fwd|bdc) |^summary" $L/f16_${m}_cc.log | cut -c1-120
done
if [ "$2" = new ]; then
  for m in 128x128x128x128 128x64x64x256 128x32x32x1024; do
    left=$((585 - SECONDS)); [ $left -lt 30 ] && { echo "skip f32 $m"; continue; }
    timeout $left $B/dwconv-bench --maps $m --op fwd,bdc --filters 5,13 --cudnn-engines --no-cudnn-legacy --cudnn-probe-budget 3000 --out $L/f32_${m}_gemv.csv > $L/f32_${m}_gemv.log 2>&1
    echo "f32 $m rc=$? ${SECONDS}s"; grep -E "^(fwd|bdc) |^summary" $L/f32_${m}_gemv.log | cut -c1-120
  done
fi
echo end ${SECONDS}s
