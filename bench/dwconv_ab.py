#!/usr/bin/env python3
"""Same-call A/B of two builds' dwconv-bench CSVs: per point (dtype, accumulation, op, map, filter) the best time of
each side over its rounds, and the speed ratio before / after (above 1: the new build is faster).

  dwconv_ab.py BEFORE.csv ... -- AFTER.csv ...

File names carry the point's dtype and accumulation as scripts/device/kernels.sh writes them:
<side>_<dtype>_<accum>_<round>.csv. Prints every point below 0.97, the geometric mean per (dtype, op), and the
worst point; with --every (first argument) every point's times and ratio first.
"""
import csv
import math
import os
import sys


def load(paths):
    best = {}
    for p in paths:
        side, dtype, accum, _ = os.path.basename(p)[:-4].split('_')
        try:
            rows = list(csv.DictReader(open(p, newline='')))
        except OSError as e:
            sys.exit(f'dwconv_ab.py: cannot read {p}: {e}')
        for r in rows:
            if not r.get('ms'):
                continue
            key = (dtype, accum if r['op'] == 'bfc' else '-', r['op'], r['map'], r['filter'])
            best[key] = min(best.get(key, math.inf), float(r['ms']))
    return best


def main(argv):
    every = bool(argv) and argv[0] == '--every'
    argv = argv[1:] if every else argv
    if '--' not in argv:
        sys.exit(__doc__)
    cut = argv.index('--')
    before, after = load(argv[:cut]), load(argv[cut + 1:])
    common = sorted(set(before) & set(after))
    if not common:
        sys.exit('dwconv_ab.py: no point measured on both sides')
    ratios = {k: before[k] / after[k] for k in common}
    if every:
        for k in common:
            print(f'{" ".join(k):44s} before {before[k]:.4f} ms  after {after[k]:.4f} ms  ratio {ratios[k]:.3f}')
    groups = {}
    for k, r in ratios.items():
        groups.setdefault(k[:3], []).append(r)
    print(f'{len(common)} points on both sides ({len(before)} before, {len(after)} after)')
    for g, rs in sorted(groups.items()):
        gm = math.exp(sum(map(math.log, rs)) / len(rs))
        print(f'{" ".join(g):16s} geomean {gm:.3f}  min {min(rs):.3f}  max {max(rs):.3f}  ({len(rs)} points)')
    slow = sorted((r, k) for k, r in ratios.items() if r < 0.97)
    for r, k in slow:
        print(f'below 0.97: {" ".join(k)}  before {before[k]:.4f} ms  after {after[k]:.4f} ms  ratio {r:.3f}')
    worst = min(ratios, key=ratios.get)
    print(f'worst: {" ".join(worst)} ratio {ratios[worst]:.3f}; points below 0.97: {len(slow)}')


if __name__ == '__main__':
    main(sys.argv[1:])
