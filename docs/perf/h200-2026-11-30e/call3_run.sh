#!/usr/bin/env bash
# Session 5, call 3: tree s6-cand (main + accurate-baseline + cc-pf + bfc-tail + bfc51). Kernel GPU tests (every
# CUDA-core FP16 configuration, GEMV with L1 prefetch); A/B without cuDNN: FP16 CUDA-core configurations at 3x3/5x5,
# FP32 GEMV L1 prefetch at 5x5/13x13, FP16 tiled backward-filter with/without bfc-tail (libcnn.so of s6-notail),
# FP32 backward-filter tiles at 51x51.
set -u
L=/tmp/s5logs3; rm -rf $L; mkdir -p $L; trap "tar -C /tmp -czf \$OUT/logs3.tgz s5logs3" EXIT
python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .device/bundle.tar.xz .device
mkdir -p .device/nt && cp -r .device/bundle .device/nt/ && xz -dc .device/libcnn_notail.so.xz > .device/nt/bundle/lib/libcnn.so
source .device/bundle/env.sh
B=.device/bundle/bin
SECONDS=0
LIMIT=${LIMIT:-265}
bench() { # name, timeout, args... (env passed by the caller)
  local n=$1 t=$2; shift 2; left=$((LIMIT - SECONDS)); [ $left -lt 8 ] && { echo "skip $n"; return; }; [ $t -gt $left ] && t=$left
  timeout $t $B/dwconv-bench "$@" --out $L/$n.csv > $L/$n.log 2>&1; echo "$n rc=$? ${SECONDS}s"
  python3 - $L/$n.csv <<'PY'
import csv, sys
try:
    for r in csv.DictReader(open(sys.argv[1])):
        print(' ', r['op'], r['map'], r['filter'], r['ms'], r['tflops'], 'copy %.2f' % float(r['frac_copy'] or 0), 'sgemm %.2f' % float(r['frac_sgemm'] or 0), r['path'][-60:], r['error'][:50])
except Exception as e: print('  no csv', e)
PY
}
timeout 90 $B/kernels_tests --gtest_filter='*Gpu*:*Cuda*' > $L/kernels_tests.log 2>&1; echo "kernels rc=$? ${SECONDS}s $(grep -E '^\[  (PASSED|FAILED)' $L/kernels_tests.log | tr '\n' ' ')"
grep -E '^\[  FAILED|Failure' -A3 $L/kernels_tests.log | head -20
Q="--no-cudnn --no-check"
for v in auto interleaved-pf first-pf interleaved-tm4 first-tm4 interleaved-pf-tm4 first-pf-tm4; do
  CNN_DWCONV_F16_CC=$v bench cc_$v 30 --dtype f16 --op fwd,bdc --filters 3,5 $Q
done
for cfg in 8,ring,whole 8,ring,whole,l1; do CNN_DWCONV_F32_GEMV=$cfg bench gemv5_${cfg//,/-} 25 --op fwd --filters 5 $Q; done
for cfg in 16,whole 16,whole,l1 16,ring,whole 16,ring,whole,l1; do CNN_DWCONV_F32_GEMV=$cfg bench gemv13_${cfg//,/-} 25 --op fwd --filters 13 $Q; done
for acc in fp32 ha; do
  bench bfctail_on_$acc 30 --dtype f16 --op bfc --bfc-accum $acc --filters 7,13,17 $Q
  B=.device/nt/bundle/bin LD_LIBRARY_PATH=$PWD/.device/nt/bundle/lib:$LD_LIBRARY_PATH bench bfctail_off_$acc 30 --dtype f16 --op bfc --bfc-accum $acc --filters 7,13,17 $Q
done
for t in auto 3x17 1x26; do
  if [ $t = auto ]; then bench bfc51_$t 30 --op bfc --filters 51 --reps 5 --warmup 1 $Q; else CNN_DWCONV_F32_BFC_TILE=$t bench bfc51_$t 30 --op bfc --filters 51 --reps 5 --warmup 1 $Q; fi
done
echo end ${SECONDS}s
