#!/usr/bin/env bash
# Eighth session, call 5. Bundle = call 4's (main's kernels). Under the sliced tile order: FP16 3x3 with 16- vs 8-byte
# lanes (the default, chosen under the strided order), and FP32 3x3 on the TMA kernel (both widths) against the
# row-sliding kernel (the default, measured against the TMA kernel only under the strided order). Twice, no cuDNN.
# Carry: .device/bundle.tar.xz .device/s8run5.sh
set -u
L=/tmp/s8logs5; rm -rf $L; mkdir -p $L; trap "tar -C /tmp -czf \$OUT/logs5.tgz s8logs5" EXIT
python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .device/bundle.tar.xz .device
source .device/bundle/env.sh
B=.device/bundle/bin
SECONDS=0
ab() { local n=$1; shift; left=$((140 - SECONDS)); [ $left -lt 10 ] && { echo "skip $n"; return; }
  timeout $left $B/dwconv-bench "$@" --no-cudnn --no-check --out $L/ab_$n.csv > $L/ab_$n.log 2>&1
  echo "ab $n rc=$? ${SECONDS}s"; grep -E "^(fwd|bdc|bfc) " $L/ab_$n.log | grep -v "F=" | awk '{print $1, $2, $3, $4}' | tr '\n' ';'; echo; }
for rep in 1 2; do
  ab f16_default_$rep --dtype f16 --op fwd,bdc --filters 3
  CNN_DWCONV_TMA_LANE=16 ab f16_lane16_$rep --dtype f16 --op fwd,bdc --filters 3
  ab f32_default_$rep --op fwd,bdc --filters 3
  for w in 16 8; do CNN_DWCONV_F32_PATH=tma CNN_DWCONV_TMA_LANE=$w ab f32_tma${w}_$rep --op fwd,bdc --filters 3; done
done
echo end ${SECONDS}s
