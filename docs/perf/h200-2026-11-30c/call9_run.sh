#!/usr/bin/env bash
# Session 3, call 9: shared direct kernels (FP32/FP16) and one mma wrapper: every kernel and layer GPU test, then
# the ring and T kernels on 128x32x32x1024 against calls 2/7 (ring) and the second session (T).
set -u
L=/tmp/logs; mkdir -p $L; trap "tar -C /tmp -czf \$OUT/logs9.tgz logs" EXIT
python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .device/bundle.tar.xz .device
source .device/bundle/env.sh
B=.device/bundle/bin
summ() { python3 - "$1" <<'PY'
import csv, sys
for r in csv.DictReader(open(sys.argv[1])):
    print(r['op'], r['map'], r['filter'], '%.3f ms' % float(r['ms']), '%.1f TF' % float(r['tflops']), r['path'][:30], 'err %.2e' % float(r['max_rel_err'] or 'nan'))
PY
}
SECONDS=0
timeout 120 $B/kernels_tests --gtest_filter='*Gpu*:*Cuda*' > $L/kernels_tests.log 2>&1; echo "kernels rc=$? ${SECONDS}s $(grep -E '^\[  (PASSED|FAILED)' $L/kernels_tests.log | tr '\n' ' ')"; grep -E 'Failure' -A5 $L/kernels_tests.log | head -20
timeout 60 $B/layers_tests --gtest_filter='*Gpu*' > $L/layers_tests.log 2>&1; echo "layers rc=$? ${SECONDS}s $(grep -E '^\[  (PASSED|FAILED)' $L/layers_tests.log | tr '\n' ' ')"
timeout 40 $B/dwconv-bench --dtype f16 --op fwd --no-cudnn --maps 128x32x32x1024 --filters 13,17,31,51 --out $L/ring.csv > $L/ring.log 2>&1; echo "ring rc=$? ${SECONDS}s"; summ $L/ring.csv
CNN_DWCONV_F16_PATH=t timeout 40 $B/dwconv-bench --dtype f16 --op fwd --no-cudnn --maps 128x32x32x1024 --filters 13,51 --out $L/t.csv > $L/t.log 2>&1; echo "t rc=$? ${SECONDS}s"; summ $L/t.csv
