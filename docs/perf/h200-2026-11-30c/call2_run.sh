#!/usr/bin/env bash
# Session 3, call 2: branch s3 (ring-k8 + bfcwide + small-filter FP32 bfc kept): every GPU test suite, sweeps of the
# changed kernels without cuDNN, ncu + SASS of the small vs tiled backward-filter kernels at 7x7.
set -u
L=/tmp/logs; mkdir -p $L; trap "tar -C /tmp -czf \$OUT/logs2.tgz logs" EXIT
python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .device/bundle.tar.xz .device
source .device/bundle/env.sh
B=.device/bundle/bin
mkdir -p /usr/share/datasets && ln -sfn $PWD/.device/fmnist /usr/share/datasets/fashion-mnist
mkdir -p /work/main/build/bin && ln -sfn $PWD/$B/cnn-train /work/main/build/bin/cnn-train
export CNN_SOURCE_DIR=$PWD OMP_WAIT_POLICY=passive
summ() { python3 - "$1" <<'PY'
import csv, sys
for r in csv.DictReader(open(sys.argv[1])):
    print(r['op'], r['map'], r['filter'], '%.3f ms' % float(r['ms']), '%.1f TF' % float(r['tflops']), r['path'][:26], 'err %.2e' % float(r['max_rel_err'] or 'nan'), r['error'][:40])
PY
}
SECONDS=0
for t in kernels layers models optim core data train; do
  timeout 150 $B/${t}_tests --gtest_filter='*Gpu*' > $L/${t}_tests.log 2>&1; echo "$t rc=$? ${SECONDS}s $(grep -E '^\[  (PASSED|FAILED)' $L/${t}_tests.log | tr '\n' ' ')"
  grep -E '^\[  FAILED|Failure' $L/${t}_tests.log | head -5
done
timeout 150 $B/dwconv-bench --dtype f16 --op fwd,bdc --no-cudnn --filters 7,9,13,17,31,51 --out $L/f16_fwdbdc.csv > $L/f16_fwdbdc.log 2>&1; echo "f16 fwd/bdc rc=$? ${SECONDS}s"; summ $L/f16_fwdbdc.csv | grep fwd
timeout 60 $B/dwconv-bench --dtype f32 --op fwd --no-cudnn --no-check --filters 13,17,31,51 --out $L/f32_fwd.csv > $L/f32_fwd.log 2>&1; echo "f32 fwd rc=$? ${SECONDS}s"; summ $L/f32_fwd.csv
timeout 90 $B/dwconv-bench --dtype f16 --op bfc --bfc-accum fp32 --no-cudnn --filters 3,5,7,9,13,17,31,51 --out $L/f16_bfc_fp32.csv > $L/f16_bfc_fp32.log 2>&1; echo "bfc fp32 rc=$? ${SECONDS}s"; summ $L/f16_bfc_fp32.csv
timeout 90 $B/dwconv-bench --dtype f16 --op bfc --bfc-accum ha --no-cudnn --filters 3,5,7,9,13,17,31,51 --out $L/f16_bfc_ha.csv > $L/f16_bfc_ha.log 2>&1; echo "bfc ha rc=$? ${SECONDS}s"; summ $L/f16_bfc_ha.csv
NCU=/usr/local/cuda/bin/ncu
for k in small tiled; do
  CNN_DWCONV_F16_BFC_PATH=$k timeout 60 $NCU --kernel-name regex:bfc_f16 --launch-skip 2 --launch-count 1 --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section Occupancy --section LaunchStats --section InstructionStats --section MemoryWorkloadAnalysis $B/dwconv-bench --dtype f16 --op bfc --no-cudnn --no-check --reps 3 --warmup 1 --maps 128x64x64x256 --filters 7 > $L/ncu_bfc7_$k.txt 2>&1; echo "ncu $k rc=$? ${SECONDS}s"
  grep -E "Duration|Executed Ipc A|Issue Slots Busy|No Eligible|Registers Per|Achieved Occupancy|Warp Cycles Per Issued|L1/TEX Hit|Executed Instructions  " $L/ncu_bfc7_$k.txt | head -12
done
timeout 60 /usr/local/cuda/bin/cuobjdump -sass $B/dwconv-bench > /tmp/sass.txt 2>&1; echo "sass rc=$? $(wc -l < /tmp/sass.txt)"
python3 - <<'PY' > $L/sass_bfc7.txt
import re, collections
cur=None; blocks=collections.defaultdict(list)
for line in open('/tmp/sass.txt'):
    m=re.search(r'Function : (\S+)', line)
    if m: cur=m.group(1); continue
    if cur and ('bfc_f16_small_kernelILi7ELi1E' in cur or 'bfc_f16_tiled_kernelILi7ELi1ELb0E' in cur):
        blocks[cur].append(line.rstrip())
for name, lines in blocks.items():
    ops=collections.Counter()
    for l in lines:
        m=re.match(r'\s+/\*[0-9a-f]+\*/\s+(?:@!?U?P\w+\s+)?([A-Z0-9_.]+)', l)
        if m: ops[m.group(1).split('.')[0]]+=1
    print(name, sum(ops.values()), dict(ops.most_common(25)))
for name, lines in blocks.items():
    print('=====', name); print('\n'.join(lines))
PY
head -2 $L/sass_bfc7.txt | cut -c1-600
