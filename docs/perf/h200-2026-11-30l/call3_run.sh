#!/usr/bin/env bash
# Session 12, call 3. Bundle = branch s12c (main 22f1114 + tma-wide: 16-column tiles default at FP16 3x3, interleaved
# tile order default where its filters keep the blocks per SM).
# (1) GPU tests of the TMA kernel (FP16 + FP32: narrow / wide tiles, 2-4 stages, four orders) and the FP16 suite;
# (2) A/B FP16 3x3 / 5x5 fwd+bdc, twice: old config (16x8 sliced) vs 16x16 sliced vs default (16x16 interleaved at 3x3;
#     5x5 interleaved where it fits, i.e. 128^4); FP32 5x5 default vs sliced;
# (3) FP16 3x3 / 5x5 against cuDNN (legacy + engines) per map with the defaults.
# Expected before measuring: interleaved balances 128x32x32x1024 (16 slices over 132 blocks: sliced groups of 8 blocks
# walk 64 tiles against a mean of 62.06) -> 3x3 there ~1.03x; the other maps within 1% (already balanced).
set -u
L=/tmp/s12logs3; rm -rf $L; mkdir -p $L; trap "tar -C /tmp -czf \$OUT/logs3.tgz s12logs3" EXIT
python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .device/bundle.tar.xz .device
source .device/bundle/env.sh
B=.device/bundle/bin
SECONDS=0
timeout 200 $B/kernels_tests --gtest_filter='*Fp16Gpu*:*Fp16Cuda*:DwconvGpu.Tma*:DwconvCudaEntry*' > $L/tests.log 2>&1
echo "tests rc=$? ${SECONDS}s $(grep -E '^\[  (PASSED|FAILED)' $L/tests.log | tr '\n' ' ')"; grep -E "^\[  FAILED|Failure|exception" $L/tests.log | head -8
run() { local n=$1; shift; left=$((300 - SECONDS)); [ $left -lt 15 ] && { echo "skip $n"; return; }
  timeout $left "$@" --no-cudnn --no-check --reps 10 --warmup 2 --out $L/$n.csv > $L/$n.log 2>&1
  echo "$n rc=$? ${SECONDS}s"; grep -E "^(fwd|bdc|bfc) " $L/$n.log | grep -v "F=" | awk '{print $1,$2,$3,$4}' | tr '\n' ';'; echo; }
F16="$B/dwconv-bench --dtype f16 --op fwd,bdc --filters 3,5"
for rep in 1 2; do
  CNN_DWCONV_TMA_COLS=8 CNN_DWCONV_TMA_TILES=sliced run old_$rep $F16
  CNN_DWCONV_TMA_TILES=sliced run sliced_$rep $F16
  run default_$rep $F16
done
grep -h "tma" $L/default_1.log $L/old_1.log | sed 's/.*(fwd/(fwd/;s/.*(bdc/(bdc/' | sort | uniq -c | head -20
F32="$B/dwconv-bench --dtype f32 --op fwd,bdc --filters 5"
CNN_DWCONV_TMA_TILES=sliced run f32sliced $F32
run f32default $F32
for f in 3 5; do for m in 128x32x32x1024 128x64x64x256 128x128x128x128; do left=$((540 - SECONDS)); [ $left -lt 30 ] && break
  timeout $left $B/dwconv-bench --dtype f16 --op fwd,bdc --maps $m --filters $f --cudnn-engines --cudnn-probe-budget 2000 --out $L/cu_${m}_$f.csv > $L/cu_${m}_$f.log 2>&1
  echo "cu $m F=$f rc=$? ${SECONDS}s"; grep -E "^(fwd |bdc )" $L/cu_${m}_$f.log | cut -c1-160
done; done
echo end ${SECONDS}s
