#!/usr/bin/env bash
# DRAFT for the twelfth session's first call (written at the end of the eleventh, not run).
# Bundle = branch s12cand (main + ha-tiles-s11: ha tiles 9x9 3x9, 13x13 1x13 / 2x13 narrow, 31x31 1x31, and
# FP16 tile-kernel test cases for them) as .device/bundle_s12cand.tar.xz. Libs: copy1 / copy2 (branch ring-copymap:
# the ring kernel's cp.async lanes cover 1 or 2 channel groups per warp instead of 4; built from main + that branch,
# ha tiles as main).
# (1) FP16 GPU tests + plan tests of s12cand (the ha tiles against the host emulation - the merge condition);
# (2) ha (checked) and fp32 backward-filter 7..51 on s12cand: the table with the new tiles, same call;
# (3) FP16 GPU tests under copy1 / copy2; ring forward A/B s12cand vs copy1 vs copy2, twice, interleaved.
# Expected for (3): the copies' shared wavefronts from ~8 to ~2 per instruction (13.8M fewer of 44M at 7x7, where the
# L1 data pipe was 87% busy): 7x7 1.05-1.2x if L1 shared bandwidth is the limit; the L1 tag / L2 side may eat it
# (copy1 reads 8 bytes of 32 sectors per instruction).
# Carry: .device/bundle_s12cand.tar.xz .device/next_s12_run1.sh .device/libcnn_copy1.so.xz .device/libcnn_copy2.so.xz
set -u
L=/tmp/s12logs1; rm -rf $L; mkdir -p $L; trap "tar -C /tmp -czf \$OUT/logs1.tgz s12logs1" EXIT
python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .device/bundle_s12cand.tar.xz .device
source .device/bundle/env.sh
B=.device/bundle/bin
for v in copy1 copy2; do mkdir -p .device/lib_$v && xz -dc .device/libcnn_$v.so.xz > .device/lib_$v/libcnn.so; done
pre() { [ $1 = cand ] && echo env || echo "env LD_LIBRARY_PATH=$PWD/.device/lib_$1:${LD_LIBRARY_PATH:-}"; }
SECONDS=0
for lib in cand copy1 copy2; do
  timeout 150 $(pre $lib) $B/kernels_tests --gtest_filter='*Fp16Gpu*:DwconvBfcPlan*' > $L/tests_$lib.log 2>&1
  echo "tests $lib rc=$? ${SECONDS}s $(grep -E '^\[  (PASSED|FAILED)' $L/tests_$lib.log | tr '\n' ' ')"; grep -E "^\[  FAILED|Failure" $L/tests_$lib.log | head -5
done
run() { local n=$1 lib=$2; shift 2; left=$((540 - SECONDS)); [ $left -lt 15 ] && { echo "skip $n"; return; }
  timeout $left $(pre $lib) $B/dwconv-bench "$@" --out $L/$n.csv > $L/$n.log 2>&1
  echo "$n rc=$? ${SECONDS}s"; grep -E "^(fwd|bdc|bfc) " $L/$n.log | grep -v "F=" | awk '{print $2,$3,$4}' | tr '\n' ';'; echo; }
A="--dtype f16 --op bfc --filters 7,9,13,17,31,51 --no-cudnn --reps 10 --warmup 2"
run bfc_ha cand $A --bfc-accum ha
run bfc_fp32 cand $A --bfc-accum fp32 --no-check
grep -h "flash" $L/bfc_ha.log | sed 's/.*(bfc/(bfc/;s/); sgemm.*//' | sort | uniq -c
for rep in 1 2; do for lib in cand copy1 copy2; do
  run ab_${lib}_$rep $lib --dtype f16 --op fwd --filters 7,9,13,17,31,51 --no-cudnn --no-check --reps 10 --warmup 2; done; done
for lib in cand copy1 copy2; do  # the ring kernel forced at 3x3 / 5x5 (the TMA kernel's shapes; 5x5 ring was 0.279 ms vs 0.222)
  CNN_DWCONV_F16_PATH=ring run ring35_${lib} $lib --dtype f16 --op fwd --filters 3,5 --no-cudnn --no-check --reps 10 --warmup 2; done
echo end ${SECONDS}s
