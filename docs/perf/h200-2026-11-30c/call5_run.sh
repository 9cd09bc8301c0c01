#!/usr/bin/env bash
# Session 3, call 5: final tree of branch s3 (ring k8, tiled backward-filter with loads-first blocks, bench
# tolerance): every GPU test suite, then FP16 backward-filter against cuDNN at 3x3-7x7 and the full fp32/ha sweep.
set -u
L=/tmp/logs; mkdir -p $L; trap "tar -C /tmp -czf \$OUT/logs5.tgz logs" EXIT
python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .device/bundle.tar.xz .device
source .device/bundle/env.sh
B=.device/bundle/bin
mkdir -p /usr/share/datasets && ln -sfn $PWD/.device/fmnist /usr/share/datasets/fashion-mnist
mkdir -p /work/wt/next-gpu/build/bin && ln -sfn $PWD/$B/cnn-train /work/wt/next-gpu/build/bin/cnn-train
export CNN_SOURCE_DIR=$PWD OMP_WAIT_POLICY=passive
summ() { python3 - "$1" <<'PY'
import csv, sys
for r in csv.DictReader(open(sys.argv[1])):
    print(r['op'], r['map'], r['filter'], '%.3f ms' % float(r['ms']), '%.1f TF' % float(r['tflops']), 'cudnn %s x%s' % (r['cudnn_ms'][:6], (r['speedup'] or '-')[:5]), r['path'][:24], 'err %.2e' % float(r['max_rel_err'] or 'nan'), r['error'][:40])
PY
}
SECONDS=0
for t in kernels layers models optim core data train; do
  timeout 150 $B/${t}_tests --gtest_filter='*Gpu*' > $L/${t}_tests.log 2>&1; echo "$t rc=$? ${SECONDS}s $(grep -E '^\[  (PASSED|FAILED)' $L/${t}_tests.log | tr '\n' ' ')"
  grep -E '^\[  FAILED|Failure' $L/${t}_tests.log | head -5
done
timeout 150 $B/dwconv-bench --dtype f16 --op bfc --bfc-accum fp32 --filters 3,5,7 --out $L/f16_bfc_fp32_cudnn.csv > $L/f16_bfc_fp32_cudnn.log 2>&1; echo "bfc fp32 vs cudnn rc=$? ${SECONDS}s"; summ $L/f16_bfc_fp32_cudnn.csv
timeout 60 $B/dwconv-bench --dtype f16 --op bfc --bfc-accum fp32 --no-cudnn --filters 9,13,17,31,51 --out $L/f16_bfc_fp32.csv > $L/f16_bfc_fp32.log 2>&1; echo "bfc fp32 rc=$? ${SECONDS}s"; summ $L/f16_bfc_fp32.csv
timeout 80 $B/dwconv-bench --dtype f16 --op bfc --bfc-accum ha --no-cudnn --filters 3,5,7,9,13,17,31,51 --out $L/f16_bfc_ha.csv > $L/f16_bfc_ha.log 2>&1; echo "bfc ha rc=$? ${SECONDS}s"; summ $L/f16_bfc_ha.csv
