#!/usr/bin/env bash
# Session 3, call 8: final FP16 kernels (loads-first CUDA-core kernel at FW >= 4, ring skip at FW % 8 == 1): FP16
# kernel tests and layer GPU tests, then 3x3/5x5 forward and backward-data against cuDNN FP16 in the same run.
set -u
L=/tmp/logs; mkdir -p $L; trap "tar -C /tmp -czf \$OUT/logs8.tgz logs" EXIT
python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .device/bundle.tar.xz .device
source .device/bundle/env.sh
B=.device/bundle/bin
summ() { python3 - "$1" <<'PY'
import csv, sys
for r in csv.DictReader(open(sys.argv[1])):
    print(r['op'], r['map'], r['filter'], '%.3f ms' % float(r['ms']), '%.1f TF' % float(r['tflops']), 'cudnn %s x%s' % (r['cudnn_ms'][:6], (r['speedup'] or '-')[:5]), r['path'][:30], 'err %.2e' % float(r['max_rel_err'] or 'nan'))
PY
}
SECONDS=0
timeout 120 $B/kernels_tests --gtest_filter='DwconvFp16Gpu.*:DwconvFp16CudaEntry.*' > $L/kernels_fp16.log 2>&1; echo "fp16 tests rc=$? ${SECONDS}s $(grep -E '^\[  (PASSED|FAILED)' $L/kernels_fp16.log | tr '\n' ' ')"; grep -E 'Failure' -A5 $L/kernels_fp16.log | head -20
timeout 60 $B/layers_tests --gtest_filter='*Gpu*' > $L/layers_tests.log 2>&1; echo "layers rc=$? ${SECONDS}s $(grep -E '^\[  (PASSED|FAILED)' $L/layers_tests.log | tr '\n' ' ')"
timeout 300 $B/dwconv-bench --dtype f16 --op fwd,bdc --filters 3,5 --out $L/f16_35_cudnn.csv > $L/f16_35_cudnn.log 2>&1; echo "f16 3/5 vs cudnn rc=$? ${SECONDS}s"; summ $L/f16_35_cudnn.csv
