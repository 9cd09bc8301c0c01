#!/usr/bin/env bash
# Session 11, call 6. Bundle = main 5aa41fa (ring: channels-first block order, gamma 4 on three blocks). All GPU
# suites; FP16 forward/backward-data 7..51 (FP64-checked) and FP32 forward 13/17 in the same run; FP16 7x7 against
# cuDNN (legacy + engines) per map; source profile of hybrid-accumulation backward-filter 9x9 (its 1.05x bar miss).
# Carry: .device/bundle.tar.xz .device/s11_run6.sh .device/fmnist
set -u
L=/tmp/s11logs6; rm -rf $L; mkdir -p $L; trap "tar -C /tmp -czf \$OUT/logs6.tgz s11logs6" EXIT
python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .device/bundle.tar.xz .device
source .device/bundle/env.sh
B=.device/bundle/bin; NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
mkdir -p /usr/share/datasets && ln -sfn $PWD/.device/fmnist /usr/share/datasets/fashion-mnist
mkdir -p /work/main/build/bin && ln -sfn $PWD/$B/cnn-train /work/main/build/bin/cnn-train
export CNN_SOURCE_DIR=$PWD OMP_WAIT_POLICY=passive
SECONDS=0
suite() { timeout 150 $B/${1}_tests --gtest_filter='*Gpu*:*Cuda*:FastDivmod*:DwconvBfcPlan*' > $L/${1}_tests.log 2>&1
  echo "$1 rc=$? ${SECONDS}s $(grep -E '^\[  (PASSED|FAILED)' $L/${1}_tests.log | tr '\n' ' ')"; grep -E "^\[  FAILED|Failure" $L/${1}_tests.log | head -5; }
for t in kernels layers models train; do suite $t; done
run() { local n=$1 lim=$2; shift 2; left=$((lim - SECONDS)); [ $left -lt 15 ] && { echo "skip $n"; return; }
  timeout $left $B/dwconv-bench "$@" --out $L/$n.csv > $L/$n.log 2>&1
  echo "$n rc=$? ${SECONDS}s"; grep -E "^(fwd|bdc|bfc) " $L/$n.log | grep -v "F=" | awk '{print $1,$2,$3,$4}' | tr '\n' ';'; echo; }
run f16_large 330 --dtype f16 --op fwd,bdc --filters 7,9,13,17,31,51 --no-cudnn
run f32_large 350 --dtype f32 --op fwd --filters 13,17 --no-cudnn --no-check
for m in 128x32x32x1024 128x64x64x256 128x128x128x128; do
  run cu_${m}_7 440 --dtype f16 --op fwd,bdc --maps $m --filters 7 --cudnn-engines --cudnn-probe-budget 2000; done
sass() { local n=$1 k=$2; shift 2
  timeout 100 $NCU --kernel-name "regex:$k" --launch-skip 1 --launch-count 1 --set full --import-source yes \
    -o $L/$n $B/dwconv-bench --no-cudnn --no-check --warmup 1 --reps 2 "$@" > $L/${n}_run.log 2>&1
  echo "$n rc=$? ${SECONDS}s"; tail -1 $L/${n}_run.log
  timeout 60 $NCU --import $L/$n.ncu-rep --page source --csv --print-source sass > $L/${n}_sass.csv 2> $L/${n}_sass.err
  gzip $L/${n}_sass.csv
  timeout 60 $NCU --import $L/$n.ncu-rep --page details --print-details all > $L/${n}_details.txt 2>&1; rm -f $L/$n.ncu-rep; }
[ $SECONDS -lt 470 ] && sass bfc_ha9 bfc_tile --dtype f16 --op bfc --bfc-accum ha --maps 128x64x64x256 --filters 9
[ $SECONDS -lt 500 ] && sass bfc_fp32_9 bfc_tile --dtype f16 --op bfc --bfc-accum fp32 --maps 128x64x64x256 --filters 9
echo end ${SECONDS}s
