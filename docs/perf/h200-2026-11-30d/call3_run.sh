#!/usr/bin/env bash
# Session 4, call 3: FP32 sweep against cuDNN (engines first; legacy too at 3 and 5) on 128x128x128x128 and
# 128x64x64x256, bfc on the register-tile kernel (the sliding-tile FP32 port measured slower in call 2).
set -u
L=/tmp/s4logs3; rm -rf $L; mkdir -p $L; trap "tar -C /tmp -czf \$OUT/logs3.tgz s4logs3" EXIT
python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .device/bundle.tar.xz .device
source .device/bundle/env.sh
B=.device/bundle/bin
export CNN_DWCONV_F32_BFC_PATH=tile
summ() { python3 - "$1" <<'PY'
import csv, sys
for r in csv.DictReader(open(sys.argv[1])):
    print(r['op'], r['map'], r['filter'], '%.3f ms' % float(r['ms'] or 'nan'), '%.1f TF' % float(r['tflops'] or 'nan'), 'x%s' % r.get('speedup',''), (r.get('cudnn_algo') or '')[:24], r['path'][:24], 'err %s' % r['max_rel_err'], r['error'][:60])
PY
}
SECONDS=0
m=128x32x32x1024
timeout 60 $B/dwconv-bench --maps $m --op bfc --filters 3,5 --cudnn-engines --out $L/f32_${m}_bfc_small.csv > $L/f32_${m}_bfc_small.log 2>&1; echo "f32 $m bfc small rc=$? ${SECONDS}s"; summ $L/f32_${m}_bfc_small.csv
for m in 128x64x64x256 128x128x128x128; do
  timeout 100 $B/dwconv-bench --maps $m --filters 3,5 --cudnn-engines --out $L/f32_${m}_small.csv > $L/f32_${m}_small.log 2>&1; echo "f32 $m small rc=$? ${SECONDS}s"; summ $L/f32_${m}_small.csv
  [ "$m" = 128x64x64x256 ] && left=$((330 - SECONDS)) || left=$((585 - SECONDS))
  [ $left -gt 30 ] && { timeout $left $B/dwconv-bench --maps $m --filters 7,9,13,17,31,51 --cudnn-engines --no-cudnn-legacy --cudnn-probe-budget 3000 --out $L/f32_${m}_large.csv > $L/f32_${m}_large.log 2>&1; echo "f32 $m large rc=$? ${SECONDS}s"; [ -f $L/f32_${m}_large.csv ] && summ $L/f32_${m}_large.csv; }
done
echo end ${SECONDS}s
