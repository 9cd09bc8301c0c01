#!/usr/bin/env bash
# Session 12, call 4. Bundle = branch s12d (main 46c0ef2 + tma-wide without the interleaved order: FP16 3x3 on
# 16-column tiles, sliced). Lib s12c = call 3's build (the kernel with the interleaved branch; 102 registers for the
# wide 3x3 kernel against 110 here), run with CNN_DWCONV_TMA_TILES=sliced.
# (1) GPU suites kernels, layers, models on s12d; (2) A/B FP16 3x3 / 5x5 fwd+bdc s12d vs s12c-sliced, twice (is call 3's faster wide
# kernel the code or the machine? expected within 1% if the machine); (3) FP16 3x3 against cuDNN per map (s12d).
# Carry: .device/bundle.tar.xz .device/s12_run4.sh .device/libcnn_s12c.so.xz
set -u
L=/tmp/s12logs4; rm -rf $L; mkdir -p $L; trap "tar -C /tmp -czf \$OUT/logs4.tgz s12logs4" EXIT
python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .device/bundle.tar.xz .device
source .device/bundle/env.sh
B=.device/bundle/bin
mkdir -p .device/lib_s12c && xz -dc .device/libcnn_s12c.so.xz > .device/lib_s12c/libcnn.so
SECONDS=0
suite() { timeout 170 $B/${1}_tests --gtest_filter='*Gpu*:*Cuda*:FastDivmod*:DwconvBfcPlan*' > $L/${1}_tests.log 2>&1
  echo "$1 rc=$? ${SECONDS}s $(grep -E '^\[  (PASSED|FAILED)' $L/${1}_tests.log | tr '\n' ' ')"; grep -E "^\[  FAILED|Failure" $L/${1}_tests.log | head -5; }
for t in kernels layers models; do suite $t; done  # train in call 5, with the dataset
run() { local n=$1; shift; left=$((400 - SECONDS)); [ $left -lt 15 ] && { echo "skip $n"; return; }
  timeout $left "$@" --no-cudnn --no-check --reps 10 --warmup 2 --out $L/$n.csv > $L/$n.log 2>&1
  echo "$n rc=$? ${SECONDS}s"; grep -E "^(fwd|bdc|bfc) " $L/$n.log | grep -v "F=" | awk '{print $1,$2,$3,$4}' | tr '\n' ';'; echo; }
F16="$B/dwconv-bench --dtype f16 --op fwd,bdc --filters 3,5"
for rep in 1 2; do
  run s12d_$rep $F16
  CNN_DWCONV_TMA_TILES=sliced run s12c_$rep env LD_LIBRARY_PATH=$PWD/.device/lib_s12c:${LD_LIBRARY_PATH:-} $F16
done
for m in 128x32x32x1024 128x64x64x256 128x128x128x128; do left=$((560 - SECONDS)); [ $left -lt 30 ] && break
  timeout $left $B/dwconv-bench --dtype f16 --op fwd,bdc --maps $m --filters 3 --cudnn-engines --cudnn-probe-budget 2000 --out $L/cu_${m}_3.csv > $L/cu_${m}_3.log 2>&1
  echo "cu $m F=3 rc=$? ${SECONDS}s"; grep -E "^(fwd |bdc )" $L/cu_${m}_3.log | cut -c1-160
done
echo end ${SECONDS}s
