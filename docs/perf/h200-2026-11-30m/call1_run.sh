#!/usr/bin/env bash
# Session 13, call 1. Bundle = main (1829145 device code; 3a09479 only changed host lines). Lib s12d = the twelfth
# session's build without the interleaved-order code (6ea2d49; its FP16 3x3 16-column kernel ran 0.93x of main's).
# (1) FP16 5x5 on two stages (expected: 3 blocks = 12 warps per SM instead of 2 blocks = 8 at three stages; if the
#     5x5 kernel is latency-bound at 8 warps, 1.03-1.10x), A/B against three stages, twice.
# (2) The TMA kernel forced at 7x7 (rows 1 and 2), information only (the ring kernel is the default there).
# (3) Nsight Compute details + source pages of FP16 3x3 forward under main and s12d, and of 5x5 under main.
# (4) cuobjdump SASS of both libraries' TMA kernels.
# Carry: .device/bundle.tar.xz .device/s13_run1.sh .device/libcnn_s12d.so.xz
set -u
L=/tmp/s13logs1; rm -rf $L; mkdir -p $L; trap "tar -C /tmp -czf \$OUT/logs1.tgz s13logs1" EXIT
python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .device/bundle.tar.xz .device
source .device/bundle/env.sh
B=.device/bundle/bin; NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
mkdir -p .device/lib_s12d && xz -dc .device/libcnn_s12d.so.xz > .device/lib_s12d/libcnn.so
pre() { [ $1 = main ] && echo env || echo "env LD_LIBRARY_PATH=$PWD/.device/lib_$1:${LD_LIBRARY_PATH:-}"; }
SECONDS=0
run() { local n=$1; shift; left=$((150 - SECONDS)); [ $left -lt 10 ] && { echo "skip $n"; return; }
  timeout $left "$@" --no-cudnn --no-check --reps 10 --warmup 2 --out $L/$n.csv > $L/$n.log 2>&1
  echo "$n rc=$? ${SECONDS}s"; grep -E "^(fwd|bdc|bfc) " $L/$n.log | grep -v "F=" | awk '{print $1,$2,$3,$4}' | tr '\n' ';'; echo; }
F5="$B/dwconv-bench --dtype f16 --op fwd,bdc --filters 5"
for rep in 1 2; do run s3_$rep $F5; CNN_DWCONV_TMA_STAGES=2 run s2_$rep $F5; done
grep -m2 -i "tma" $L/s2_1.log | cut -c1-200
CNN_DWCONV_F16_PATH=tma run tma7_r1 env CNN_DWCONV_TMA_ROWS=1 $B/dwconv-bench --dtype f16 --op fwd --filters 7
CNN_DWCONV_F16_PATH=tma run tma7_r2 env CNN_DWCONV_TMA_ROWS=2 $B/dwconv-bench --dtype f16 --op fwd --filters 7
run ring7 $B/dwconv-bench --dtype f16 --op fwd --filters 7
prof() { local n=$1 lib=$2 f=$3; shift 3; left=$((480 - SECONDS)); [ $left -lt 60 ] && { echo "skip $n"; return; }
  timeout $left $(pre $lib) $NCU --kernel-name "regex:dwconv_tma_cc" --launch-skip 1 --launch-count 1 --set full --import-source yes \
    -o $L/$n $B/dwconv-bench --no-cudnn --no-check --warmup 1 --reps 2 --dtype f16 --op fwd --filters $f --maps 128x64x64x256 > $L/${n}_run.log 2>&1
  echo "$n rc=$? ${SECONDS}s"
  timeout 40 $NCU --import $L/$n.ncu-rep --page details --print-details all > $L/${n}_details.txt 2>&1
  timeout 40 $NCU --import $L/$n.ncu-rep --page source --csv --print-source sass 2>/dev/null | gzip > $L/${n}_sass.csv.gz
  grep -E "^    (Duration|L2 Cache Throughput|Issue Slots Busy|Executed Instructions  |Registers Per Thread)" $L/${n}_details.txt | head -6
  rm -f $L/$n.ncu-rep; gzip $L/${n}_details.txt; }
prof main3 main 3; prof s12d3 s12d 3; prof main5 main 5
CUOBJ=$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)
for lib in main s12d; do f=$([ $lib = main ] && echo .device/bundle/lib/libcnn.so || echo .device/lib_s12d/libcnn.so)
  timeout 60 $CUOBJ -sass $f 2>/dev/null | awk '/Function : .*dwconv_tma_cc_kernel/{p=1} /Function : /&&!/dwconv_tma_cc_kernel/{p=0} p' | gzip > $L/sass_$lib.txt.gz
  echo "sass $lib $(zcat $L/sass_$lib.txt.gz | wc -l) lines"; done
echo end ${SECONDS}s
