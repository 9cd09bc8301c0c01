#!/usr/bin/env bash
# Ninth session, call 4. Bundle = branch tma-divmod16 (main + multiply-shift tile divisors in the TMA kernel's
# 16-byte-lane instantiations only; the 8-byte-lane kernels are main's code). GPU suites (kernels, layers, models,
# train); A/B against main's lib (FP16 3x3/5x5, FP32 5x5) twice with SM clock / power sampled by nvidia-smi; the
# FP16 5x5 default against cuDNN (legacy + engines) on the three maps.
# Expected: FP16 5x5 1.08-1.09x (call 3), everything else within noise of main.
# Carry: .device/bundle.tar.xz .device/s9run4.sh .device/libcnn_main.so.xz
set -u
L=/tmp/s9logs4; rm -rf $L; mkdir -p $L; trap "tar -C /tmp -czf \$OUT/logs4.tgz s9logs4" EXIT
python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .device/bundle.tar.xz .device
source .device/bundle/env.sh
B=.device/bundle/bin
mkdir -p .device/v_main && cp -r .device/bundle .device/v_main/ && xz -dc .device/libcnn_main.so.xz > .device/v_main/bundle/lib/libcnn.so
mkdir -p .device/v_new && ln -sfn $PWD/.device/bundle .device/v_new/bundle
md5sum .device/v_*/bundle/lib/libcnn.so
mkdir -p /usr/share/datasets && ln -sfn $PWD/.device/fmnist /usr/share/datasets/fashion-mnist
mkdir -p /work/main/build/bin && ln -sfn $PWD/$B/cnn-train /work/main/build/bin/cnn-train
export CNN_SOURCE_DIR=$PWD OMP_WAIT_POLICY=passive
SECONDS=0
suite() { timeout 150 $B/${1}_tests --gtest_filter='*Gpu*:*Cuda*:FastDivmod*' > $L/${1}_tests.log 2>&1
  echo "$1 rc=$? ${SECONDS}s $(grep -E '^\[  (PASSED|FAILED)' $L/${1}_tests.log | tr '\n' ' ')"; grep -E "^\[  FAILED|Failure" $L/${1}_tests.log | head -5; }
for t in kernels layers models; do suite $t; done  # train (needs .device/fmnist) in a later call: the carry limit
run() { local v=$1; shift; LD_LIBRARY_PATH=$PWD/.device/v_$v/bundle/lib:$LD_LIBRARY_PATH "$@"; }
ab() { local v=$1 n=$2; shift 2; left=$((260 - SECONDS)); [ $left -lt 15 ] && { echo "skip $n"; return; }
  nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv,noheader -lms 100 > $L/smi_$n.csv 2>/dev/null & local smi=$!
  run $v timeout $left .device/v_$v/bundle/bin/dwconv-bench "$@" --no-cudnn --no-check --out $L/ab_$n.csv > $L/ab_$n.log 2>&1
  echo "ab $n rc=$? ${SECONDS}s"; kill $smi 2>/dev/null; wait $smi 2>/dev/null
  awk -F, 'NR > 1 { printf "%s %s %s %.4f;", $1, $2, $3, $4 }' $L/ab_$n.csv; echo
  awk -F, '{ c += $2; p += $4; n++ } END { if (n) printf "  smi: %d samples, mean SM clock %.0f MHz, mean power %.0f W\n", n, c / n, p / n }' $L/smi_$n.csv; }
for rep in 1 2; do
  for v in main new; do ab $v f16_${v}_$rep --dtype f16 --op fwd,bdc --filters 3,5; ab $v f32_${v}_$rep --op fwd,bdc --filters 5; done
done
for m in 128x32x32x1024 128x64x64x256 128x128x128x128; do left=$((580 - SECONDS)); [ $left -lt 40 ] && break
  timeout $left $B/dwconv-bench --dtype f16 --op fwd,bdc --maps $m --filters 5 --cudnn-engines --cudnn-probe-budget 2000 --out $L/cu_$m.csv > $L/cu_$m.log 2>&1
  echo "cu $m rc=$? ${SECONDS}s"; grep -E "^(fwd |bdc |summary)" $L/cu_$m.log
done
echo end ${SECONDS}s
