#!/usr/bin/env bash
# Session 3, call 3: train GPU tests (cnn-train at the path the test binary was built with), SASS of the 7x7
# backward-filter kernels (small vs tiled), ncu source counters of the tiled one.
set -u
L=/tmp/logs; mkdir -p $L; trap "tar -C /tmp -czf \$OUT/logs3.tgz logs" EXIT
python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .device/bundle.tar.xz .device
source .device/bundle/env.sh
B=.device/bundle/bin
mkdir -p /usr/share/datasets && ln -sfn $PWD/.device/fmnist /usr/share/datasets/fashion-mnist
mkdir -p /work/wt/next-gpu/build/bin && ln -sfn $PWD/$B/cnn-train /work/wt/next-gpu/build/bin/cnn-train
export CNN_SOURCE_DIR=$PWD OMP_WAIT_POLICY=passive
SECONDS=0
timeout 200 $B/train_tests --gtest_filter='*Gpu*' > $L/train_tests.log 2>&1; echo "train rc=$? ${SECONDS}s $(grep -E '^\[  (PASSED|FAILED)' $L/train_tests.log | tr '\n' ' ')"
grep -E 'Failure|acc|loss' $L/train_tests.log | head -20
timeout 60 /usr/local/cuda/bin/cuobjdump -sass .device/bundle/lib/libcnn.so > /tmp/sass.txt 2>&1; echo "sass rc=$? $(wc -l < /tmp/sass.txt)"
python3 - <<'PY' > $L/sass_bfc7.txt
import re, collections
cur=None; blocks=collections.defaultdict(list)
want=('bfc_f16_small_kernelILi7ELi1E', 'bfc_f16_tiled_kernelILi7ELi1ELb0E', 'bfc_f16_tiled_kernelILi7ELi1ELb1E')
for line in open('/tmp/sass.txt'):
    m=re.search(r'Function : (\S+)', line)
    if m: cur=m.group(1) if any(w in m.group(1) for w in want) else None; continue
    if cur: blocks[cur].append(line.rstrip())
for name, lines in blocks.items():
    ops=collections.Counter()
    for l in lines:
        m=re.match(r'\s+/\*[0-9a-f]+\*/\s+(?:@!?U?P\w+\s+)?([A-Z0-9_.]+)', l)
        if m: ops[m.group(1).split('.')[0]]+=1
    print(name, sum(ops.values()), dict(ops.most_common(25)))
for name, lines in blocks.items():
    print('=====', name); print('\n'.join(lines))
PY
head -3 $L/sass_bfc7.txt | cut -c1-700
CNN_DWCONV_F16_BFC_PATH=tiled timeout 90 /usr/local/cuda/bin/ncu --kernel-name regex:bfc_f16 --launch-skip 2 --launch-count 1 --section SourceCounters --section WarpStateStats $B/dwconv-bench --dtype f16 --op bfc --no-cudnn --no-check --reps 3 --warmup 1 --maps 128x64x64x256 --filters 7 > $L/ncu_bfc7_tiled_src.txt 2>&1; echo "ncu rc=$? ${SECONDS}s"
grep -A30 "Warp Stall Sampling\|Stall Reasons" $L/ncu_bfc7_tiled_src.txt | head -60
