#!/usr/bin/env bash
# Session 3, call 4: tiled backward-filter kernel with all loads of an unrolled block issued before its FMAs:
# FP16 kernel tests, then the bfc sweep with the tiled kernel forced (fp32) and ha, against call 2's numbers.
set -u
L=/tmp/logs; mkdir -p $L; trap "tar -C /tmp -czf \$OUT/logs4.tgz logs" EXIT
python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .device/bundle.tar.xz .device
source .device/bundle/env.sh
B=.device/bundle/bin
summ() { python3 - "$1" <<'PY'
import csv, sys
for r in csv.DictReader(open(sys.argv[1])):
    print(r['op'], r['map'], r['filter'], '%.3f ms' % float(r['ms']), '%.1f TF' % float(r['tflops']), r['path'][:26], 'err %.2e' % float(r['max_rel_err'] or 'nan'), r['error'][:40])
PY
}
SECONDS=0
timeout 120 $B/kernels_tests --gtest_filter='DwconvFp16*' > $L/kernels_fp16.log 2>&1; echo "fp16 tests rc=$? ${SECONDS}s $(grep -E '^\[  (PASSED|FAILED)' $L/kernels_fp16.log | tr '\n' ' ')"; grep -E 'Failure' -A5 $L/kernels_fp16.log | head -20
CNN_DWCONV_F16_BFC_PATH=tiled timeout 100 $B/dwconv-bench --dtype f16 --op bfc --bfc-accum fp32 --no-cudnn --filters 3,5,7,9,13,17,31,51 --out $L/f16_bfc_fp32_tiled.csv > $L/f16_bfc_fp32_tiled.log 2>&1; echo "bfc fp32 tiled rc=$? ${SECONDS}s"; summ $L/f16_bfc_fp32_tiled.csv
timeout 100 $B/dwconv-bench --dtype f16 --op bfc --bfc-accum ha --no-cudnn --filters 3,5,7,9,13,17,31,51 --out $L/f16_bfc_ha.csv > $L/f16_bfc_ha.log 2>&1; echo "bfc ha rc=$? ${SECONDS}s"; summ $L/f16_bfc_ha.csv
