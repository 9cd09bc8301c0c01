#!/usr/bin/env bash
# Session 7, call 4. Same bundle as call 3 (branch f16-bfc-default). Hybrid accumulation at 7x7 / 9x9, where it ran
# 0.93-0.95x of fp32 accumulation in call 3: forced tiles within its 32-tap budget (each run checked against FP64 on
# 64 samples); then both accumulations' defaults on the whole sweep with the FP64 check, for their MARE.
set -u
L=/tmp/s7logs4; rm -rf $L; mkdir -p $L; trap "tar -C /tmp -czf \$OUT/logs4.tgz s7logs4" EXIT
python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .device/bundle.tar.xz .device
source .device/bundle/env.sh
B=.device/bundle/bin
SECONDS=0
ab() { local n=$1; shift; left=$((330 - SECONDS)); [ $left -lt 15 ] && { echo "skip $n"; return; }
  timeout $left $B/dwconv-bench "$@" --no-cudnn --reps 10 --warmup 2 --out $L/ab_$n.csv > $L/ab_$n.log 2>&1
  echo "ab $n rc=$? ${SECONDS}s"; grep -E "^bfc " $L/ab_$n.log | grep -v "F=" | awk '{print $2, $3, $4, $5, $11}' | tr '\n' ';'; echo; }
for t in 1x7 3x7 2x8 4x8; do CNN_DWCONV_BFC_TILE=$t ab ha7_$t --dtype f16 --op bfc --bfc-accum ha --filters 7; done
for t in 3x9 1x9 2x9 4x8; do CNN_DWCONV_BFC_TILE=$t ab ha9_$t --dtype f16 --op bfc --bfc-accum ha --filters 9; done
for acc in ha fp32; do ab check_$acc --dtype f16 --op bfc --bfc-accum $acc; done
echo end ${SECONDS}s
