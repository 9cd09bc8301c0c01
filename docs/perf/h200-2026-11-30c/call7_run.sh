#!/usr/bin/env bash
# Session 3, call 7: ring kernel skipping the all-zero MMAs of the last fragment at FW % 8 == 1, CUDA-core FP16 kernel
# with loads first: FP16 kernel tests (every gamma / FW 2..61, awkward shapes), then fwd/bdc at 3, 5, 9, 17 (FP16,
# no cuDNN) and FP32 forward at 17 (same run, for the 2x bar).
set -u
L=/tmp/logs; mkdir -p $L; trap "tar -C /tmp -czf \$OUT/logs7.tgz logs" EXIT
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
timeout 100 $B/dwconv-bench --dtype f16 --op fwd,bdc --no-cudnn --filters 3,5,9,17 --out $L/f16_fwdbdc.csv > $L/f16_fwdbdc.log 2>&1; echo "f16 rc=$? ${SECONDS}s"; summ $L/f16_fwdbdc.csv
timeout 60 $B/dwconv-bench --dtype f32 --op fwd --no-cudnn --no-check --filters 17 --out $L/f32_fwd17.csv > $L/f32_fwd17.log 2>&1; echo "f32 rc=$? ${SECONDS}s"; summ $L/f32_fwd17.csv
