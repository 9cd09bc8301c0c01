#!/usr/bin/env bash
# Session 10, call 1. Bundle = main (a1551c8). (1) GPU tests of main (the store_row epilogue not yet run on a GPU);
# (2) FP16 5x5 / 3x3 forward+bdc timing without cuDNN (compare with ninth session's call 7); (3) Nsight Compute source
# pages (SASS with per-instruction stall samples and shared-memory wavefronts) of the FP16 3x3 TMA kernel and the
# ring kernel at 13x13; (4) hybrid-accumulation 17x17 tile sweep over row widths 16..128 (1x17 vs 2x9), fp32 too.
set -u
L=/tmp/s10logs1; rm -rf $L; mkdir -p $L; trap "tar -C /tmp -czf \$OUT/logs1.tgz s10logs1" EXIT
python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .device/bundle.tar.xz .device
source .device/bundle/env.sh
B=.device/bundle/bin; NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
SECONDS=0
timeout 150 $B/kernels_tests --gtest_filter='*Gpu*:*Cuda*:FastDivmod*' > $L/kernels_tests.log 2>&1
echo "kernels rc=$? ${SECONDS}s $(grep -E '^\[  (PASSED|FAILED)' $L/kernels_tests.log | tr '\n' ' ')"; grep -E "^\[  FAILED" $L/kernels_tests.log | head
timeout 60 $B/dwconv-bench --dtype f16 --op fwd,bdc --filters 3,5 --no-cudnn --out $L/f16_35.csv > $L/f16_35.log 2>&1
echo "f16 3,5 rc=$? ${SECONDS}s"; grep -E "^(fwd|bdc) " $L/f16_35.log | awk '{print $1,$2,$3,$4,$5}' | tr '\n' ';'; echo
$NCU --version > $L/ncu_version.txt 2>&1; $NCU --help > $L/ncu_help.txt 2>&1; head -3 $L/ncu_version.txt; grep -iE "print-source|--page" $L/ncu_help.txt | head -5
sass() { local n=$1 k=$2; shift 2
  timeout 150 $NCU --kernel-name "regex:$k" --launch-skip 1 --launch-count 1 --set full --import-source yes \
    -o $L/$n $B/dwconv-bench --no-cudnn --no-check --warmup 1 --reps 2 "$@" > $L/${n}_run.log 2>&1
  echo "$n rc=$? ${SECONDS}s"; tail -2 $L/${n}_run.log
  timeout 90 $NCU --import $L/$n.ncu-rep --page source --csv --print-source sass > $L/${n}_sass.csv 2> $L/${n}_sass.err
  echo "$n source rc=$? $(wc -l < $L/${n}_sass.csv) lines"; head -2 $L/${n}_sass.err
  timeout 60 $NCU --import $L/$n.ncu-rep --page details --print-details all > $L/${n}_details.txt 2>&1; }
sass tma16_3 dwconv_tma_cc --dtype f16 --op fwd --maps 128x64x64x256 --filters 3
sass ring16_13 tc_ring --dtype f16 --op fwd --maps 128x64x64x256 --filters 13
ab() { local n=$1; shift; left=$((560 - SECONDS)); [ $left -lt 15 ] && { echo "skip $n"; return; }
  timeout $left $B/dwconv-bench "$@" --no-cudnn --no-check --reps 5 --warmup 1 --out $L/ab_$n.csv > $L/ab_$n.log 2>&1
  echo "ab $n rc=$? ${SECONDS}s"; grep -E "^bfc " $L/ab_$n.log | awk '{print $2, $3, $4, $5}' | tr '\n' ';'; echo; }
M=128x16x16x2048,128x24x24x1024,128x32x32x1024,128x48x48x512,128x64x64x256,128x96x96x128,128x128x128x128
for acc in ha fp32; do for t in 1x17 2x9; do
  CNN_DWCONV_BFC_TILE=$t ab ${acc}17_$t --dtype f16 --op bfc --bfc-accum $acc --filters 17 --maps $M; done; done
ab fp32_17_auto --dtype f16 --op bfc --bfc-accum fp32 --filters 17 --maps $M
ls -la $L | head -40
echo end ${SECONDS}s
