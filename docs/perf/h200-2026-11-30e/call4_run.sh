#!/usr/bin/env bash
# Session 5, call 4: same bundle as call 3 (tree s6-cand). FP32 backward-filter register tiles at 51x51 (the cost
# model's 3x17 against bfc51's 1x26 and two others), then the fastest one against cuDNN's engines on the two maps
# where 51x51 backward-filter was slower than eng18 (0.81x, 0.95x).
set -u
L=/tmp/s5logs4; rm -rf $L; mkdir -p $L; trap "tar -C /tmp -czf \$OUT/logs4.tgz s5logs4" EXIT
python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .device/bundle.tar.xz .device
source .device/bundle/env.sh
B=.device/bundle/bin
SECONDS=0
LIMIT=${LIMIT:-215}
for t in 3x17 1x26 1x17 3x13; do
  CNN_DWCONV_F32_BFC_TILE=$t timeout 30 $B/dwconv-bench --op bfc --filters 51 --reps 5 --warmup 1 --no-cudnn --no-check --out $L/bfc51_$t.csv > $L/bfc51_$t.log 2>&1; echo "bfc51 $t rc=$? ${SECONDS}s"; grep -E "^bfc " $L/bfc51_$t.log
done
best=$(python3 - $L <<'PY'
import csv, glob, sys
tot = {}
for f in glob.glob(sys.argv[1] + '/bfc51_*.csv'):
    rows = list(csv.DictReader(open(f)))
    if len(rows) == 3 and all(r['ms'] for r in rows): tot[f.split('_')[-1][:-4]] = sum(float(r['ms']) for r in rows)
print(min(tot, key=tot.get) if tot else '3x17')
PY
)
echo "best tile $best"
for m in 128x128x128x128 128x64x64x256; do
  left=$((LIMIT - SECONDS)); [ $left -lt 20 ] && continue
  CNN_DWCONV_F32_BFC_TILE=$best timeout $left $B/dwconv-bench --maps $m --op bfc --filters 51 --cudnn-engines --no-cudnn-legacy --cudnn-probe-budget 3000 --out $L/f32_${m}_bfc51_$best.csv > $L/f32_${m}_bfc51.log 2>&1; echo "f32 $m bfc51 vs engines rc=$? ${SECONDS}s"; grep -E "^(bfc |summary bfc)" $L/f32_${m}_bfc51.log
done
echo end ${SECONDS}s
