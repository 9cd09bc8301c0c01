#!/usr/bin/env bash
# Session 11, call 7. Bundle = working tree: hybrid-accumulation backward-filter with whole runs unrolled (window
# reloaded per run, one flush per run, no per-step run test). Old = main 5aa41fa's library (.device/libcnn_main_s11).
# Call 6's source profile of ha 9x9: HFMA2 46% of instructions, branch bookkeeping (BSSY/BSYNC/BRA) 11% with 35% of
# the stall samples (barrier, no_inst, branch_resolving) - the flush test after every unrolled step.
# Expected before measuring: ha 9x9 1.1-1.3x, other filters 1.0-1.2x; results bit-identical (same runs and order).
# (1) FP16 GPU kernel tests (ha against the host emulation); (2) ha old/new twice interleaved, fp32 once.
set -u
L=/tmp/s11logs7; rm -rf $L; mkdir -p $L; trap "tar -C /tmp -czf \$OUT/logs7.tgz s11logs7" EXIT
python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .device/bundle.tar.xz .device
source .device/bundle/env.sh
B=.device/bundle/bin
mkdir -p .device/lib_old && xz -dc .device/libcnn_main_s11.so.xz > .device/lib_old/libcnn.so
pre() { [ $1 = new ] && echo env || echo "env LD_LIBRARY_PATH=$PWD/.device/lib_old:${LD_LIBRARY_PATH:-}"; }
SECONDS=0
timeout 120 $B/kernels_tests --gtest_filter='*Fp16Gpu*:*BackwardFilter*Gpu*:*Bfc*Cuda*' > $L/tests_f16.log 2>&1
echo "tests rc=$? ${SECONDS}s $(grep -E '^\[  (PASSED|FAILED)' $L/tests_f16.log | tr '\n' ' ')"; grep -E "^\[  FAILED|Failure" $L/tests_f16.log | head -8
run() { local n=$1 lib=$2; shift 2; left=$((420 - SECONDS)); [ $left -lt 15 ] && { echo "skip $n"; return; }
  timeout $left $(pre $lib) $B/dwconv-bench "$@" --out $L/$n.csv > $L/$n.log 2>&1
  echo "$n rc=$? ${SECONDS}s"; grep -E "^(fwd|bdc|bfc) " $L/$n.log | grep -v "F=" | awk '{print $2,$3,$4}' | tr '\n' ';'; echo; }
A="--dtype f16 --op bfc --filters 7,9,13,17,31,51 --no-cudnn --reps 10 --warmup 2"
run ha_old_1 old $A --bfc-accum ha --no-check
run ha_new_1 new $A --bfc-accum ha
run ha_old_2 old $A --bfc-accum ha --no-check
run ha_new_2 new $A --bfc-accum ha --no-check
run fp32 new $A --bfc-accum fp32 --no-check
echo end ${SECONDS}s
