#!/usr/bin/env bash
# Session 3, call 1: next-gpu (cc4 + bfcwide + ring-k8): GPU kernel tests, then no-cuDNN sweeps of the changed kernels.
set -u
L=/tmp/logs; mkdir -p $L; trap "tar -C /tmp -czf \$OUT/logs1.tgz logs" EXIT
python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .device/bundle.tar.xz .device
source .device/bundle/env.sh
B=.device/bundle/bin
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv > $L/gpu.txt
summ() { python3 - "$1" <<'PY'
import csv, sys
for r in csv.DictReader(open(sys.argv[1])):
    print(r['op'], r['map'], r['filter'], '%.3f ms' % float(r['ms']), '%.1f TF' % float(r['tflops']), 'cudnn %s x%s' % (r['cudnn_ms'], (r['speedup'] or '-')[:5]), r['path'][:34], r['error'][:40])
PY
}
SECONDS=0
timeout 170 $B/kernels_tests --gtest_filter='Dwconv*Gpu*' > $L/kernels_gpu.log 2>&1; echo "kernel gpu tests rc=$? ${SECONDS}s"; grep -E '^\[  (PASSED|FAILED)|Failure|FAILED' $L/kernels_gpu.log | head -20
timeout 120 $B/dwconv-bench --dtype f16 --op fwd,bdc --no-cudnn --filters 3,13,17,31,51 --out $L/f16_fwdbdc.csv > $L/f16_fwdbdc.log 2>&1; echo "f16 fwd/bdc rc=$? ${SECONDS}s"; summ $L/f16_fwdbdc.csv
timeout 90 $B/dwconv-bench --dtype f16 --op bfc --bfc-accum fp32 --no-cudnn --filters 3,5,7,13,31,51 --out $L/f16_bfc_fp32.csv > $L/f16_bfc_fp32.log 2>&1; echo "bfc fp32 rc=$? ${SECONDS}s"; summ $L/f16_bfc_fp32.csv
timeout 90 $B/dwconv-bench --dtype f16 --op bfc --bfc-accum ha --no-cudnn --filters 3,5,7,13,31,51 --out $L/f16_bfc_ha.csv > $L/f16_bfc_ha.log 2>&1; echo "bfc ha rc=$? ${SECONDS}s"; summ $L/f16_bfc_ha.csv
timeout 100 $B/dwconv-bench --dtype f32 --op fwd,bdc --filters 3 --out $L/f32_3x3.csv > $L/f32_3x3.log 2>&1; echo "f32 3x3 rc=$? ${SECONDS}s"; summ $L/f32_3x3.csv
