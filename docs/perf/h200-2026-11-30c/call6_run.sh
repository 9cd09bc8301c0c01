#!/usr/bin/env bash
# Session 3, call 6: tiled backward-filter with 2-row tiles at TW 5 (kRtMax[5] = 2): FP16 bfc tests, then 5x5 (vs
# cuDNN) and 9x9 in both accumulation modes, against call 5's 1-row numbers.
set -u
L=/tmp/logs; mkdir -p $L; trap "tar -C /tmp -czf \$OUT/logs6.tgz logs" EXIT
python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .device/bundle.tar.xz .device
source .device/bundle/env.sh
B=.device/bundle/bin
summ() { python3 - "$1" <<'PY'
import csv, sys
for r in csv.DictReader(open(sys.argv[1])):
    print(r['op'], r['map'], r['filter'], '%.3f ms' % float(r['ms']), '%.1f TF' % float(r['tflops']), 'cudnn %s x%s' % (r['cudnn_ms'][:6], (r['speedup'] or '-')[:5]), r['path'][36:110], 'err %.2e' % float(r['max_rel_err'] or 'nan'))
PY
}
SECONDS=0
timeout 120 $B/kernels_tests --gtest_filter='DwconvFp16Gpu.BackwardFilter*' > $L/kernels_bfc.log 2>&1; echo "bfc tests rc=$? ${SECONDS}s $(grep -E '^\[  (PASSED|FAILED)' $L/kernels_bfc.log | tr '\n' ' ')"; grep -E 'Failure' -A5 $L/kernels_bfc.log | head -20
timeout 60 $B/dwconv-bench --dtype f16 --op bfc --bfc-accum fp32 --filters 5 --out $L/bfc5_fp32.csv > $L/bfc5_fp32.log 2>&1; echo "rc=$? ${SECONDS}s"; summ $L/bfc5_fp32.csv
timeout 60 $B/dwconv-bench --dtype f16 --op bfc --bfc-accum fp32 --no-cudnn --filters 9 --out $L/bfc9_fp32.csv > $L/bfc9_fp32.log 2>&1; echo "rc=$? ${SECONDS}s"; summ $L/bfc9_fp32.csv
timeout 60 $B/dwconv-bench --dtype f16 --op bfc --bfc-accum ha --no-cudnn --filters 5,9 --out $L/bfc59_ha.csv > $L/bfc59_ha.log 2>&1; echo "rc=$? ${SECONDS}s"; summ $L/bfc59_ha.csv
