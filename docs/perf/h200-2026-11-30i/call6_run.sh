#!/usr/bin/env bash
# Ninth session, call 6. Bundle = branch tma-rows2 (main 7e0a12e + optional two output rows per 8-byte-lane thread,
# CNN_DWCONV_TMA_ROWS=2; the default stays one row). Against main's lib by library swap. Why: Nsight Compute of
# FP16 3x3 (calls 3, 5) shows math-pipe throttle ~1.1 and short-scoreboard ~1.6 warps per issue: the FMA pipe also
# runs the FP16 -> FP32 widenings (3.75 per output at 3x3 next to 9 FMAs) and every window row is loaded by FH threads.
# Two rows per thread read FH + 1 rows for two outputs rows: a third fewer loads and widenings (~10% fewer FMA-pipe
# instructions per output), in 128-thread blocks of 159 registers (12 warps per SM instead of 24).
# Expected: FP16 3x3 anywhere from 0.95x to 1.08x (fewer warps against fewer instructions); 5x5 (FP16 16-byte lanes
# unchanged) and FP32 5x5 rows=2 at 8 warps per SM likely slower. TMA tests; A/B twice; if rows=2 wins at FP16 3x3,
# its 3x3 against cuDNN on the three maps.
# Carry: .device/bundle.tar.xz .device/s9run6.sh .device/libcnn_main.so.xz
set -u
L=/tmp/s9logs6; rm -rf $L; mkdir -p $L; trap "tar -C /tmp -czf \$OUT/logs6.tgz s9logs6" EXIT
python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .device/bundle.tar.xz .device
source .device/bundle/env.sh
mkdir -p .device/v_main && cp -r .device/bundle .device/v_main/ && xz -dc .device/libcnn_main.so.xz > .device/v_main/bundle/lib/libcnn.so
mkdir -p .device/v_new && ln -sfn $PWD/.device/bundle .device/v_new/bundle
md5sum .device/v_*/bundle/lib/libcnn.so
SECONDS=0
run() { local v=$1; shift; LD_LIBRARY_PATH=$PWD/.device/v_$v/bundle/lib:$LD_LIBRARY_PATH "$@"; }
timeout 120 .device/bundle/bin/kernels_tests --gtest_filter='*Tma*:*EveryForwardKernel*:*ForwardPath*:*AwkwardShapes*:*LargerShapes*' > $L/tests_rows2.log 2>&1
echo "tests rc=$? ${SECONDS}s $(grep -E '^\[  (PASSED|FAILED)' $L/tests_rows2.log | tr '\n' ' ')"; grep -E "^\[  FAILED|Failure" $L/tests_rows2.log | head -5
ab() { local v=$1 n=$2; shift 2; left=$((230 - SECONDS)); [ $left -lt 15 ] && { echo "skip $n"; return; }
  run $v timeout $left .device/v_$v/bundle/bin/dwconv-bench "$@" --no-cudnn --no-check --out $L/ab_$n.csv > $L/ab_$n.log 2>&1
  echo "ab $n rc=$? ${SECONDS}s"; awk -F, 'NR > 1 { printf "%s %s %s %.4f;", $1, $2, $3, $4 }' $L/ab_$n.csv; echo; }
for rep in 1 2; do
  ab main f16_main_$rep --dtype f16 --op fwd,bdc --filters 3,5
  ab new f16_rows1_$rep --dtype f16 --op fwd,bdc --filters 3,5
  CNN_DWCONV_TMA_ROWS=2 CNN_DWCONV_TMA_LANE=8 ab new f16_rows2_$rep --dtype f16 --op fwd,bdc --filters 3,5
  ab main f32_main_$rep --op fwd,bdc --filters 5
  CNN_DWCONV_TMA_ROWS=2 ab new f32_rows2_$rep --op fwd,bdc --filters 5
done
total() { awk -F, 'NR > 1 && $3 == 3 { s += $4 } END { printf "%.4f", s }' "$@"; }
tm=$(total $L/ab_f16_main_*.csv) t1=$(total $L/ab_f16_rows1_*.csv) t2=$(total $L/ab_f16_rows2_*.csv)
echo "f16 3x3 sum ms: main $tm rows1 $t1 rows2 $t2"
if awk -v a=$t2 -v b=$tm 'BEGIN { exit !(a < b) }'; then
  for m in 128x32x32x1024 128x64x64x256 128x128x128x128; do left=$((330 - SECONDS)); [ $left -lt 30 ] && break
    CNN_DWCONV_TMA_ROWS=2 timeout $left .device/bundle/bin/dwconv-bench --dtype f16 --op fwd,bdc --maps $m --filters 3 --cudnn-engines --cudnn-probe-budget 2000 --out $L/cu_$m.csv > $L/cu_$m.log 2>&1
    echo "cu $m rc=$? ${SECONDS}s"; grep -E "^(fwd |bdc |summary)" $L/cu_$m.log
  done
fi
echo end ${SECONDS}s
