#!/usr/bin/env bash
# Session 12, call 5 (final). Bundle = branch s12e (main 46c0ef2 + tma-wide: FP16 3x3 on 16-column tiles, the kernel
# PTX-identical to call 3's s12c build, default order sliced). (1) All GPU suites; (2) FP16 3x3 / 5x5 against cuDNN
# (legacy + engines) per map; (3) Nsight Compute of the FP16 3x3 forward kernel, 16 and 8 columns, for the next step.
# Carry: .device/bundle.tar.xz .device/s12_run5.sh .device/fmnist
set -u
L=/tmp/s12logs5; rm -rf $L; mkdir -p $L; trap "tar -C /tmp -czf \$OUT/logs5.tgz s12logs5" EXIT
python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .device/bundle.tar.xz .device
source .device/bundle/env.sh
B=.device/bundle/bin; NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
mkdir -p /usr/share/datasets && ln -sfn $PWD/.device/fmnist /usr/share/datasets/fashion-mnist
mkdir -p /work/main/build/bin && ln -sfn $PWD/$B/cnn-train /work/main/build/bin/cnn-train
export CNN_SOURCE_DIR=$PWD OMP_WAIT_POLICY=passive
SECONDS=0
suite() { timeout 170 $B/${1}_tests --gtest_filter='*Gpu*:*Cuda*:FastDivmod*:DwconvBfcPlan*' > $L/${1}_tests.log 2>&1
  echo "$1 rc=$? ${SECONDS}s $(grep -E '^\[  (PASSED|FAILED)' $L/${1}_tests.log | tr '\n' ' ')"; grep -E "^\[  FAILED|Failure" $L/${1}_tests.log | head -5; }
for t in kernels layers models train; do suite $t; done
for f in 3 5; do for m in 128x32x32x1024 128x64x64x256 128x128x128x128; do left=$((380 - SECONDS)); [ $left -lt 30 ] && break
  timeout $left $B/dwconv-bench --dtype f16 --op fwd,bdc --maps $m --filters $f --cudnn-engines --cudnn-probe-budget 2000 --out $L/cu_${m}_$f.csv > $L/cu_${m}_$f.log 2>&1
  echo "cu $m F=$f rc=$? ${SECONDS}s"; grep -E "^(fwd |bdc )" $L/cu_${m}_$f.log | cut -c1-160
done; done
prof() { local n=$1; shift; left=$((480 - SECONDS)); [ $left -lt 45 ] && { echo "skip $n"; return; }
  timeout $left $NCU --kernel-name "regex:dwconv_tma_cc" --launch-skip 1 --launch-count 1 --set full --import-source yes \
    -o $L/$n $B/dwconv-bench --no-cudnn --no-check --warmup 1 --reps 2 --dtype f16 --op fwd --filters 3 "$@" > $L/${n}_run.log 2>&1
  echo "$n rc=$? ${SECONDS}s"
  timeout 40 $NCU --import $L/$n.ncu-rep --page details --print-details all > $L/${n}_details.txt 2>&1
  timeout 40 $NCU --import $L/$n.ncu-rep --page source --csv --print-source sass 2>/dev/null | gzip > $L/${n}_sass.csv.gz
  grep -E "^    (Duration|DRAM Throughput|L2 Cache Throughput|L1/TEX Cache Throughput|Achieved Occupancy|Registers Per Thread|Issue Slots Busy|Executed Instructions  )" $L/${n}_details.txt | head -10
  rm -f $L/$n.ncu-rep; gzip $L/${n}_details.txt; }
prof w16_256 --maps 128x64x64x256
CNN_DWCONV_TMA_COLS=8 prof w8_256 --maps 128x64x64x256
echo end ${SECONDS}s
