#!/usr/bin/env bash
# Session 4, call 1: branch s4 = main + cv3 (row-sliding kernel <= 5x5) + cudnn-engines. Kernel GPU tests, then
# small filters (3, 5) fwd/bdc both dtypes against cuDNN legacy + engines, and A/B against the old kernels.
set -u
L=/tmp/s4logs1; rm -rf $L; mkdir -p $L; trap "tar -C /tmp -czf \$OUT/logs1.tgz s4logs1" EXIT
python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .device/bundle.tar.xz .device
source .device/bundle/env.sh
B=.device/bundle/bin
summ() { python3 - "$1" <<'PY'
import csv, sys
for r in csv.DictReader(open(sys.argv[1])):
    print(r['op'], r['map'], r['filter'], '%.3f ms' % float(r['ms'] or 'nan'), '%.1f TF' % float(r['tflops'] or 'nan'), 'x%s' % r.get('speedup',''), (r.get('cudnn_algo') or '')[:28], r['path'][:24], 'err %s' % r['max_rel_err'], r['error'][:60])
PY
}
SECONDS=0
timeout 240 $B/kernels_tests --gtest_filter='DwconvGpu.*:DwconvFp16Gpu.*:DwconvCudaEntry.*' > $L/kernels_tests.log 2>&1; echo "kernels rc=$? ${SECONDS}s $(grep -E '^\[  (PASSED|FAILED)' $L/kernels_tests.log | tr '\n' ' ')"; grep -E 'Failure|FAILED' -A6 $L/kernels_tests.log | head -40
timeout 60 $B/dwconv-bench --selftest --cudnn-engines > $L/selftest.log 2>&1; echo "selftest rc=$? ${SECONDS}s"; tail -3 $L/selftest.log
for dt in f16 f32; do
  for m in 128x128x128x128 128x64x64x256 128x32x32x1024; do
    timeout 100 $B/dwconv-bench --dtype $dt --op fwd,bdc --filters 3,5 --maps $m --cudnn-engines --out $L/${dt}_$m.csv > $L/${dt}_$m.log 2>&1; echo "$dt $m rc=$? ${SECONDS}s"; [ -f $L/${dt}_$m.csv ] && summ $L/${dt}_$m.csv
  done
done
CNN_DWCONV_F16_PATH=cc timeout 60 $B/dwconv-bench --dtype f16 --op fwd,bdc --filters 3,5 --no-cudnn --out $L/f16_cc.csv > $L/f16_cc.log 2>&1; echo "f16 cc rc=$? ${SECONDS}s"; summ $L/f16_cc.csv
CNN_DWCONV_F32_PATH=gemv timeout 60 $B/dwconv-bench --dtype f32 --op fwd,bdc --filters 3,5 --no-cudnn --out $L/f32_gemv.csv > $L/f32_gemv.log 2>&1; echo "f32 gemv rc=$? ${SECONDS}s"; summ $L/f32_gemv.csv
