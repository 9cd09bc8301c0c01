#!/usr/bin/env bash
# Session 7, call 5 (short). Same bundle as calls 3-4. Call 4 found hybrid accumulation 1.37x faster at 7x7 with 2x8
# tiles than with the model's 1x7; do the fp32-accumulation paths (FP32 data, FP16 data) gain from 2x8 / 2x9 too?
set -u
L=/tmp/s7logs5; rm -rf $L; mkdir -p $L; trap "tar -C /tmp -czf \$OUT/logs5.tgz s7logs5" EXIT
python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .device/bundle.tar.xz .device
source .device/bundle/env.sh
B=.device/bundle/bin
SECONDS=0
ab() { local n=$1; shift; left=$((120 - SECONDS)); [ $left -lt 10 ] && { echo "skip $n"; return; }
  timeout $left $B/dwconv-bench "$@" --no-cudnn --no-check --reps 10 --warmup 2 --out $L/ab_$n.csv > $L/ab_$n.log 2>&1
  echo "ab $n rc=$? ${SECONDS}s"; grep -E "^bfc " $L/ab_$n.log | grep -v "F=" | awk '{print $2, $3, $4}' | tr '\n' ';'; echo; }
for t in 7x7 2x8; do CNN_DWCONV_BFC_TILE=$t ab f16_7_$t --dtype f16 --op bfc --filters 7; done
for t in 7x7 2x8; do CNN_DWCONV_BFC_TILE=$t ab f32_7_$t --op bfc --filters 7; done
for t in 3x9 2x9; do CNN_DWCONV_BFC_TILE=$t ab f32_9_$t --op bfc --filters 9; done
echo end ${SECONDS}s
