#!/usr/bin/env bash
# Session 12, call 2. Bundle = branch s12b (main + ha tiles + tma-wide: 16-column tiles and 2-4 stages for the TMA
# CUDA-core kernel as configuration). Lib w2 = same tree with the 512-thread wide kernel compiled for 2 blocks/SM.
# (1) GPU tests of the TMA kernel (FP16 + FP32, narrow and wide tiles) and the FP16 suite;
# (2) A/B FP16 3x3 / 5x5 fwd+bdc: default (16x8, 3 stages) vs 16x16 with 2/3/4 stages vs w2 16x16 2 stages, twice;
# (3) FP32 5x5 default vs 16x16 2/3 stages.
# Expected before measuring: 16x16 at 3x3 reads 18x18 windows per 256 outputs (1.27 per output against 1.41), so
# L2 traffic per output 2.27 against 2.41 units (-6%); if L2 throughput is the ceiling (the kernel's L2 traffic rate
# is ~95% of a device copy's), 3x3 1.03-1.06x; fewer warps per SM (16 at 1 block of 512) may eat it. 5x5 (rows=2):
# 20x20 per 256 against 20x12 per 128 (1.56 vs 1.88 per output), same 8 warps/SM: 1.0-1.08x.
set -u
L=/tmp/s12logs2; rm -rf $L; mkdir -p $L; trap "tar -C /tmp -czf \$OUT/logs2.tgz s12logs2" EXIT
python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .device/bundle.tar.xz .device
source .device/bundle/env.sh
B=.device/bundle/bin
mkdir -p .device/lib_w2 && xz -dc .device/libcnn_w2.so.xz > .device/lib_w2/libcnn.so
SECONDS=0
timeout 200 $B/kernels_tests --gtest_filter='*Fp16Gpu*:*Fp16Cuda*:DwconvGpu.Tma*:DwconvCudaEntry*:DwconvBfcPlan*' > $L/tests.log 2>&1
echo "tests rc=$? ${SECONDS}s $(grep -E '^\[  (PASSED|FAILED)' $L/tests.log | tr '\n' ' ')"; grep -E "^\[  FAILED|Failure" $L/tests.log | head -8
run() { local n=$1; shift; left=$((560 - SECONDS)); [ $left -lt 15 ] && { echo "skip $n"; return; }
  timeout $left "$@" --no-cudnn --no-check --reps 10 --warmup 2 --out $L/$n.csv > $L/$n.log 2>&1
  echo "$n rc=$? ${SECONDS}s"; grep -E "^(fwd|bdc|bfc) " $L/$n.log | grep -v "F=" | awk '{print $1,$2,$3,$4}' | tr '\n' ';'; echo; }
F16="$B/dwconv-bench --dtype f16 --op fwd,bdc --filters 3,5"
W2="env LD_LIBRARY_PATH=$PWD/.device/lib_w2:${LD_LIBRARY_PATH:-}"
for rep in 1 2; do
  run base_$rep $F16
  CNN_DWCONV_TMA_COLS=16 CNN_DWCONV_TMA_STAGES=2 run c16s2_$rep $F16
  CNN_DWCONV_TMA_COLS=16 CNN_DWCONV_TMA_STAGES=3 run c16s3_$rep $F16
  CNN_DWCONV_TMA_COLS=16 CNN_DWCONV_TMA_STAGES=4 run c16s4_$rep $F16
  CNN_DWCONV_TMA_COLS=16 CNN_DWCONV_TMA_STAGES=2 run w2c16s2_$rep $W2 $F16
done
grep -h "tma" $L/c16s2_1.log $L/base_1.log | sed 's/.*(fwd/(fwd/;s/.*(bdc/(bdc/' | sort | uniq -c | head
F32="$B/dwconv-bench --dtype f32 --op fwd,bdc --filters 5"
run f32base $F32
CNN_DWCONV_TMA_COLS=16 CNN_DWCONV_TMA_STAGES=2 run f32c16s2 $F32
CNN_DWCONV_TMA_COLS=16 CNN_DWCONV_TMA_STAGES=3 run f32c16s3 $F32
echo end ${SECONDS}s
