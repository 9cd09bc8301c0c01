#!/usr/bin/env bash
# Session 11, call 3. Bundle = main fc82a85 (streaming reverted). Where the ring kernel's time goes at small FH: the
# ring kernel forced (CNN_DWCONV_F16_PATH=ring) at F = 1, 3, 5, 7, 9 on the three maps: per-tile fixed cost (F=1:
# one filter row per tile) against per-row cost.
set -u
L=/tmp/s11logs3; rm -rf $L; mkdir -p $L; trap "tar -C /tmp -czf \$OUT/logs3.tgz s11logs3" EXIT
python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .device/bundle.tar.xz .device
source .device/bundle/env.sh
B=.device/bundle/bin
SECONDS=0
for rep in 1 2; do
  CNN_DWCONV_F16_PATH=ring timeout 120 $B/dwconv-bench --dtype f16 --op fwd --filters 1,3,5,7,9 --no-cudnn --no-check --reps 10 --warmup 2 --out $L/ring_small_$rep.csv > $L/ring_small_$rep.log 2>&1
  echo "ring rc=$? ${SECONDS}s"; grep -E "^fwd " $L/ring_small_$rep.log | awk '{print $2,$3,$4}' | tr '\n' ';'; echo
done
timeout 120 $B/dwconv-bench --dtype f16 --op fwd --filters 1 --no-cudnn --no-check --reps 10 --warmup 2 --out $L/auto_1.csv > $L/auto_1.log 2>&1
echo "auto F1 rc=$?"; grep -E "^fwd " $L/auto_1.log | awk '{print $2,$3,$4,$NF}' | tr '\n' ';'; echo
echo end ${SECONDS}s
