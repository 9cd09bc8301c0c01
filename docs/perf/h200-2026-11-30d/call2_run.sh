#!/usr/bin/env bash
# Session 4, call 2: tests of the trimmed row-sliding kernel and FP32 sliding-tile bfc; bfc A/B slide vs tile;
# FP32 sweep against cuDNN (engines first) on 128x32x32x1024.
set -u
L=/tmp/s4logs2; rm -rf $L; mkdir -p $L; trap "tar -C /tmp -czf \$OUT/logs2.tgz s4logs2" EXIT
python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .device/bundle.tar.xz .device
source .device/bundle/env.sh
B=.device/bundle/bin
summ() { python3 - "$1" <<'PY'
import csv, sys
for r in csv.DictReader(open(sys.argv[1])):
    print(r['op'], r['map'], r['filter'], '%.3f ms' % float(r['ms'] or 'nan'), '%.1f TF' % float(r['tflops'] or 'nan'), 'x%s' % r.get('speedup',''), (r.get('cudnn_algo') or '')[:24], r['path'][:30], 'err %s' % r['max_rel_err'], r['error'][:60])
PY
}
SECONDS=0
timeout 200 $B/kernels_tests --gtest_filter='DwconvGpu.*:DwconvFp16Gpu.*:DwconvBfcGpu.*:DwconvCudaEntry.*' > $L/kernels_tests.log 2>&1; echo "kernels rc=$? ${SECONDS}s $(grep -E '^\[  (PASSED|FAILED)' $L/kernels_tests.log | tr '\n' ' ')"; grep -E 'Failure|FAILED' -A6 $L/kernels_tests.log | head -30
timeout 30 $B/dwconv-bench --selftest --cudnn-engines > $L/selftest.log 2>&1; echo "selftest rc=$? ${SECONDS}s $(tail -1 $L/selftest.log)"
for path in slide tile; do
  CNN_DWCONV_F32_BFC_PATH=$path timeout 150 $B/dwconv-bench --op bfc --no-cudnn --reps 10 --warmup 2 --out $L/bfc_$path.csv > $L/bfc_$path.log 2>&1; echo "bfc $path rc=$? ${SECONDS}s"; summ $L/bfc_$path.csv
done
timeout 60 $B/dwconv-bench --op fwd,bdc --filters 3 --no-cudnn --out $L/f32_vs3.csv > $L/f32_vs3.log 2>&1; echo "vs3 rc=$? ${SECONDS}s"; summ $L/f32_vs3.csv
m=128x32x32x1024
timeout 120 $B/dwconv-bench --maps $m --filters 3,5 --cudnn-engines --out $L/f32_${m}_small.csv > $L/f32_${m}_small.log 2>&1; echo "f32 $m small rc=$? ${SECONDS}s"; summ $L/f32_${m}_small.csv
left=$((575 - SECONDS)); [ $left -gt 30 ] && { timeout $left $B/dwconv-bench --maps $m --filters 7,9,13,17,31,51 --cudnn-engines --no-cudnn-legacy --cudnn-probe-budget 3000 --out $L/f32_${m}_large.csv > $L/f32_${m}_large.log 2>&1; echo "f32 $m large rc=$? ${SECONDS}s"; [ -f $L/f32_${m}_large.csv ] && summ $L/f32_${m}_large.csv; }
echo end ${SECONDS}s
