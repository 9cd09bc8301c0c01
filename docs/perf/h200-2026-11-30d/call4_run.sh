#!/usr/bin/env bash
# Session 4, call 4: final tree (FP32 bfc port reverted, FP16 tiled-bfc plans cached, engine 0 probed last): kernel
# GPU tests; FP32 bfc 31/51 against cuDNN engines on the two maps where engine 0 spent the probe budget in call 3;
# FP16 sweep against cuDNN (legacy + engines at 3 and 5, engines only beyond).
set -u
L=/tmp/s4logs4; rm -rf $L; mkdir -p $L; trap "tar -C /tmp -czf \$OUT/logs4.tgz s4logs4" EXIT
python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .device/bundle.tar.xz .device
source .device/bundle/env.sh
B=.device/bundle/bin
summ() { python3 - "$1" <<'PY'
import csv, sys
for r in csv.DictReader(open(sys.argv[1])):
    print(r['op'], r['map'], r['filter'], '%.3f ms' % float(r['ms'] or 'nan'), 'x%s' % r.get('speedup',''), (r.get('cudnn_algo') or '')[:24], r['path'][:20], 'err %s' % r['max_rel_err'], r['error'][:60])
PY
}
SECONDS=0
timeout 120 $B/kernels_tests --gtest_filter='DwconvGpu.*:DwconvFp16Gpu.*:DwconvBfcGpu.*:DwconvCudaEntry.*' > $L/kernels_tests.log 2>&1; echo "kernels rc=$? ${SECONDS}s $(grep -E '^\[  (PASSED|FAILED)' $L/kernels_tests.log | tr '\n' ' ')"; grep -E 'Failure|FAILED' -A6 $L/kernels_tests.log | head -30
for m in 128x64x64x256 128x128x128x128; do
  timeout 90 $B/dwconv-bench --maps $m --op bfc --filters 31,51 --cudnn-engines --no-cudnn-legacy --cudnn-probe-budget 3000 --out $L/f32_${m}_bfc_large.csv > $L/f32_${m}_bfc_large.log 2>&1; echo "f32 $m bfc large rc=$? ${SECONDS}s"; summ $L/f32_${m}_bfc_large.csv
done
for m in 128x32x32x1024 128x64x64x256 128x128x128x128; do
  timeout 90 $B/dwconv-bench --dtype f16 --maps $m --filters 3,5 --cudnn-engines --out $L/f16_${m}_small.csv > $L/f16_${m}_small.log 2>&1; echo "f16 $m small rc=$? ${SECONDS}s"; summ $L/f16_${m}_small.csv
done
for fs in 7,9,13 17,31,51; do
  for m in 128x32x32x1024 128x64x64x256 128x128x128x128; do
    left=$((585 - SECONDS)); [ $left -lt 20 ] && continue
    timeout $left $B/dwconv-bench --dtype f16 --maps $m --filters $fs --cudnn-engines --no-cudnn-legacy --cudnn-probe-budget 3000 --out $L/f16_${m}_$fs.csv > $L/f16_${m}_$fs.log 2>&1; echo "f16 $m $fs rc=$? ${SECONDS}s"; [ -f $L/f16_${m}_$fs.csv ] && summ $L/f16_${m}_$fs.csv
  done
done
echo end ${SECONDS}s
