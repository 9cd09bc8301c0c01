#!/usr/bin/env bash
# Session 5, call 1: tree s5-candidate (main + accurate-baseline + bfc-tail + bfc51 + ring-tr). Every GPU suite;
# ring-tr A/B (same bundle with libcnn.so of s5-candidate-noring); FP16 17/31/51 against the cuDNN engines.
set -u
L=/tmp/s5logs1; rm -rf $L; mkdir -p $L; trap "tar -C /tmp -czf \$OUT/logs1.tgz s5logs1" EXIT
python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .device/bundle.tar.xz .device
mkdir -p .device/nr && cp -r .device/bundle .device/nr/ && xz -dc .device/libcnn_noring.so.xz > .device/nr/bundle/lib/libcnn.so
source .device/bundle/env.sh
B=.device/bundle/bin
mkdir -p /usr/share/datasets && ln -sfn $PWD/.device/fmnist /usr/share/datasets/fashion-mnist
mkdir -p /work/main/build/bin && ln -sfn $PWD/$B/cnn-train /work/main/build/bin/cnn-train
export CNN_SOURCE_DIR=$PWD OMP_WAIT_POLICY=passive
SECONDS=0
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv > $L/gpu.txt 2>&1
for t in kernels layers models optim core data train; do
  to=120; [ $t = kernels ] && to=200
  timeout $to $B/${t}_tests --gtest_filter='*Gpu*:*Cuda*' > $L/${t}_tests.log 2>&1; echo "$t rc=$? ${SECONDS}s $(grep -E '^\[  (PASSED|FAILED)' $L/${t}_tests.log | tr '\n' ' ')"
  grep -E '^\[  FAILED|Failure' -A4 $L/${t}_tests.log | head -12
done
for b in bundle nr/bundle; do
  n=$(echo $b | tr / _)
  (LD_LIBRARY_PATH=$PWD/.device/$b/lib:$LD_LIBRARY_PATH timeout 60 .device/$b/bin/dwconv-bench --dtype f16 --op fwd,bdc --filters 7,9,13,17,31,51 --no-cudnn --out $L/ring_$n.csv > $L/ring_$n.log 2>&1); echo "ring A/B $n rc=$? ${SECONDS}s"; grep -E "^(fwd|bdc) " $L/ring_$n.log
done
for f in 17 31 51; do
  for m in 128x32x32x1024 128x64x64x256 128x128x128x128; do
    left=$((580 - SECONDS)); [ $left -lt 20 ] && continue
    timeout $left $B/dwconv-bench --dtype f16 --maps $m --filters $f --cudnn-engines --no-cudnn-legacy --cudnn-probe-budget 3000 --out $L/f16_${m}_$f.csv > $L/f16_${m}_$f.log 2>&1; echo "f16 $m $f rc=$? ${SECONDS}s"; grep -E "^(summary|fwd |bdc |bfc )" $L/f16_${m}_$f.log
  done
done
echo end ${SECONDS}s
