#!/usr/bin/env bash
# Session 11, call 1. Bundle = main 1f908b5 (code = 68cf0c2). (1) FP16 GPU tests under g4b3 / biasinit libs and ring
# forward A/B of main, g4b3, biasinit twice (expected: g4b3 moves 31x31 only, +-3%; biasinit 1-2% at 7-17);
# (2) Nsight Compute source pages of the ring kernel at 7x7 on 128x64x64x256 and 128x32x32x1024 (7x7 runs as long as
# 9x9 on the first map: where does the per-tile time go at gamma 1?).
set -u
L=/tmp/s11logs1; rm -rf $L; mkdir -p $L; trap "tar -C /tmp -czf \$OUT/logs1.tgz s11logs1" EXIT
python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .device/bundle.tar.xz .device
source .device/bundle/env.sh
B=.device/bundle/bin; NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
for v in g4b3 biasinit; do mkdir -p .device/lib_$v && xz -dc .device/libcnn_$v.so.xz > .device/lib_$v/libcnn.so; done
pre() { [ $1 = main ] && echo env || echo "env LD_LIBRARY_PATH=$PWD/.device/lib_$1:${LD_LIBRARY_PATH:-}"; }
SECONDS=0
for lib in g4b3 biasinit; do
  timeout 90 $(pre $lib) $B/kernels_tests --gtest_filter='*Fp16Gpu*' > $L/tests_$lib.log 2>&1
  echo "tests $lib rc=$? ${SECONDS}s $(grep -E '^\[  (PASSED|FAILED)' $L/tests_$lib.log | tr '\n' ' ')"; grep -E "^\[  FAILED" $L/tests_$lib.log | head -3
done
sass() { local n=$1 k=$2; shift 2
  timeout 150 $NCU --kernel-name "regex:$k" --launch-skip 1 --launch-count 1 --set full --import-source yes \
    -o $L/$n $B/dwconv-bench --no-cudnn --no-check --warmup 1 --reps 2 "$@" > $L/${n}_run.log 2>&1
  echo "$n rc=$? ${SECONDS}s"; tail -2 $L/${n}_run.log
  timeout 90 $NCU --import $L/$n.ncu-rep --page source --csv --print-source sass > $L/${n}_sass.csv 2> $L/${n}_sass.err
  echo "$n source rc=$? $(wc -l < $L/${n}_sass.csv) lines"; head -2 $L/${n}_sass.err; gzip $L/${n}_sass.csv
  timeout 60 $NCU --import $L/$n.ncu-rep --page details --print-details all > $L/${n}_details.txt 2>&1; }
sass ring7_64 tc_ring --dtype f16 --op fwd --maps 128x64x64x256 --filters 7
sass ring7_32 tc_ring --dtype f16 --op fwd --maps 128x32x32x1024 --filters 7
run() { local n=$1 lib=$2; shift 2; left=$((540 - SECONDS)); [ $left -lt 15 ] && { echo "skip $n"; return; }
  timeout $left $(pre $lib) $B/dwconv-bench "$@" --out $L/$n.csv > $L/$n.log 2>&1
  echo "$n rc=$? ${SECONDS}s"; grep -E "^(fwd|bdc|bfc) " $L/$n.log | grep -v "F=" | awk '{print $3,$4}' | tr '\n' ';'; echo; }
for rep in 1 2; do for lib in main g4b3 biasinit; do
  run ab_${lib}_$rep $lib --dtype f16 --op fwd --filters 7,9,13,17,31,51 --no-cudnn --no-check --reps 10 --warmup 2; done; done
rm -f $L/*.ncu-rep.tmp; ls -la $L | head -40
echo end ${SECONDS}s
