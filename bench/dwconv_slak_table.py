#!/usr/bin/env python3
"""The results page of scripts/device/slak_dwconv.sh: SLaK-T's depthwise points against their baselines.

  dwconv_slak_table.py DIR --command TEXT [-o PAGE.md]

DIR holds one run's files: ours_<dtype>_<map>.csv (dwconv-bench with cuDNN's engines, the odd-channel map and its
aligned twin), padoff_f16_<map>.csv (dwconv-bench --kernel pad=off), torch_<dtype>_<map>.csv (bench/dwconv_torch.py),
build.txt and nvidia-smi.txt. For every point of an odd channel count: our time and plan, the direct kernel's time
(pad=off), the fastest cuDNN engine's and PyTorch's, and the time per FLOP against the same filter at the aligned
twin (C rounded up to a multiple of 8). Points a time limit cut off are listed as missing, never filled in.
Standard library only.
"""
import argparse
import csv
import glob
import os
import sys

OPS = ('fwd', 'bdc', 'bfc')


def read(path):
    with open(path, newline='') as f:
        return list(csv.DictReader(f))


def num(text):
    try:
        return float(text)
    except (TypeError, ValueError):
        return None


def channels(m):
    return int(m.split('x')[3])


def taps(f):
    dims = [int(d) for d in f.split('x')]
    return dims[0] * dims[-1]


def nearest_square(points, dt, op, m, f):
    """The square filter measured on the same map whose tap count is nearest to the strip f's, or None."""
    squares = [g for (d, o, mm, g) in points if (d, o, mm) == (dt, op, m) and 'x' not in g and g != '5'
               and points[(d, o, mm, g)].get('ours')]
    return min(squares, key=lambda g: abs(taps(g) - taps(f))) if 'x' in f and squares else None


def runs_left_out(folder):
    """The run's files the time limit left out: for every odd map and data type that some file of the run names,
    ours and torch, ours at its aligned twin, and padoff for FP16. (Runs that held a map and its twin in one file
    are complete without the twin's.)"""
    names = {os.path.basename(p)[:-4] for p in glob.glob(os.path.join(folder, '*_*_*.csv'))}
    maps = sorted({n.split('_')[2] for n in names if channels(n.split('_')[2]) % 8}, key=channels)
    dtypes = sorted({n.split('_')[1] for n in names})
    twins_apart = any(channels(n.split('_')[2]) % 8 == 0 for n in names)
    want = [f'{kind}_{dt}_{m}' for dt in dtypes for kind in ('ours', 'torch') for m in maps]
    if twins_apart:
        want += [f'ours_{dt}_{aligned_twin(m)}' for dt in dtypes for m in maps]
    want += [f'padoff_f16_{m}' for m in maps if 'f16' in dtypes]
    return [w for w in want if w not in names]


def aligned_twin(m):
    n, h, w, c = m.split('x')
    return f'{n}x{h}x{w}x{(int(c) + 7) // 8 * 8}'


def load(folder):
    """(dtype, op, map, filter) -> {'ours', 'path', 'cudnn', 'cudnn_algo', 'direct', 'torch'}."""
    points = {}

    def at(dt, r):
        return points.setdefault((dt, r['op'], r['map'], r['filter']), {})

    for path in sorted(glob.glob(os.path.join(folder, 'ours_*.csv'))):
        dt = os.path.basename(path).split('_')[1]
        for r in read(path):
            if r.get('error'):
                continue
            p = at(dt, r)
            p['ours'], p['path'] = num(r['ms']), r['path']
            p['cudnn'], p['cudnn_algo'] = num(r['cudnn_ok_ms']) or num(r['cudnn_ms']), r['cudnn_ok_algo'] or r['cudnn_algo']
    for path in sorted(glob.glob(os.path.join(folder, 'padoff_*.csv'))):
        dt = os.path.basename(path).split('_')[1]
        for r in read(path):
            if not r.get('error'):
                at(dt, r)['direct'] = num(r['ms'])
    for path in sorted(glob.glob(os.path.join(folder, 'torch_*.csv'))):
        for r in read(path):
            if not r.get('error'):
                at(r['dtype'], r)['torch'] = num(r['ms'])
    return points


def fmt(v, digits=3):
    return '-' if v is None else f'{v:.{digits}f}'


def ratio(a, b):
    return None if a is None or b is None or b == 0 else a / b


def table(points, dt):
    odd = sorted({(m, f) for (d, _, m, f) in points if d == dt and channels(m) % 8},
                 key=lambda k: (channels(k[0]), k[1]))
    lines = ['| op | map | filter | ours ms | plan | direct ms (pad=off) | cuDNN ms | PyTorch ms | vs best baseline '
             '| per FLOP vs aligned C | per FLOP vs square |',
             '|---|---|---|---|---|---|---|---|---|---|---|']
    rows = []
    for m, f in odd:
        twin = aligned_twin(m)
        for op in OPS:
            p = points.get((dt, op, m, f), {})
            t = points.get((dt, op, twin, f), {})
            base = [v for v in (p.get('cudnn'), p.get('torch')) if v is not None]
            vs_base = ratio(min(base), p.get('ours')) if base else None
            per_flop = None
            if p.get('ours') and t.get('ours'):
                per_flop = (p['ours'] / channels(m)) / (t['ours'] / channels(twin))
            sq = nearest_square(points, dt, op, m, f)
            vs_sq = None
            if sq and p.get('ours'):
                vs_sq = (p['ours'] / taps(f)) / (points[(dt, op, m, sq)]['ours'] / taps(sq))
            rows.append((op, m, f, p, vs_base, per_flop, twin))
            plan = p.get('path', '')
            plan = plan[:plan.find(' (channels padded')] + ' (padded)' if '(channels padded' in plan else plan
            lines.append(f'| {op} | {m} | {f} | {fmt(p.get("ours"))} | {plan or "-"} | {fmt(p.get("direct"))} '
                         f'| {fmt(p.get("cudnn"))} | {fmt(p.get("torch"))} '
                         f'| {"-" if vs_base is None else f"{vs_base:.2f}x"} '
                         f'| {"-" if per_flop is None else f"{per_flop:.2f}x ({twin.split(chr(120))[3]})"} '
                         f'| {"-" if vs_sq is None else f"{vs_sq:.2f}x ({sq}x{sq})"} |')
    return lines, rows


def summary(rows):
    slower = [f'{op} {m} {f} ({v:.2f}x)' for op, m, f, _, v, _, _ in rows if v is not None and v < 1]
    over = [f'{op} {m} {f} ({r:.2f}x)' for op, m, f, _, _, r, _ in rows if r is not None and r > 1.3]
    within = [r for *_, r, _ in rows if r is not None and r <= 1.3]
    missing = sum(1 for *_, p, v, r, _ in rows if v is None or r is None)
    return [f'- slower than the faster of cuDNN and PyTorch: {len(slower)} point(s)' + (': ' + ', '.join(slower) if slower else ''),
            f'- per FLOP within 1.3x of the aligned twin: {len(within)} point(s); over: {len(over)}' + (': ' + ', '.join(over) if over else ''),
            f'- points with a comparison missing (cut by the time limit): {missing}']


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('folder')
    ap.add_argument('--command', required=True)
    ap.add_argument('-o', '--out')
    a = ap.parse_args()
    if not os.path.isdir(a.folder):
        sys.exit(f'dwconv_slak_table.py: {a.folder}: not a folder')
    points = load(a.folder)
    if not points:
        sys.exit(f'dwconv_slak_table.py: {a.folder}: no ours_/padoff_/torch_ CSV files')

    def first_line(name):
        path = os.path.join(a.folder, name)
        return open(path).readline().strip() if os.path.exists(path) else 'not recorded'

    out = ['# Depthwise convolution at SLaK-T\'s shapes on the H200: odd channel counts and strips', '',
           'SLaK-T at batch 64 and 256x256 images runs its depthwise convolutions on 124, 249, 499 and 998 channels '
           '(stages 0-3: 64, 32, 16, 8 pixels square), with strips FKx5 and 5xFK (FK = 51, 49, 47, 13) and a 5x5 '
           'small kernel. The fast kernels need C % 8 == 0 (FP16) or C % 4 == 0 (FP32); other counts run them on '
           'copies padded with zero channels (`kernels/dwconv/cuda/select.cpp`, "Channel padding"), the "(padded)" '
           'plans below, except where a kernel takes the count as it is: forward and backward-data with filters '
           'up to 5x5 (FP16 at C % 8 == 4 on the CUDA-core kernel\'s 4-half lanes, other counts on the tiled direct '
           'kernel), and FP16 backward-filter at an even C, whose register-tile kernel then stages 8- or 4-byte '
           'copies ("copy=8B", "scalar"). Columns: '
           'our median ms (dwconv-bench, FP64-checked), the plan, the direct kernel the same point ran before padding (pad=off, FP16 only), the fastest cuDNN backend engine that passed the same '
           'check, PyTorch 2.11 (channels_last, cudnn.benchmark), the faster baseline over ours, and our time per '
           'FLOP over our time per FLOP at the aligned twin map (same filter, C rounded up to a multiple of 8) and, for '
           'the strips, over the square filter measured on the same map with the nearest number of taps.', '']
    for dt, title in (('f16', 'FP16 (FP32 accumulation)'), ('f32', 'FP32')):
        if not any(k[0] == dt for k in points):
            continue
        lines, rows = table(points, dt)
        out += [f'## {title}', ''] + lines + [''] + summary(rows) + ['']
        if dt == 'f32':
            out += ['FP32\'s fast kernels need C % 4 == 0 only: at 124 channels all three ops run unpadded.', '']
    # The run's folder is archived beside the page under the page's name.
    archive = os.path.splitext(os.path.basename(a.out))[0] + '.tgz' if a.out else 'dwconv-slak-h200.tgz'
    out += ['## How it was measured', '', f'Command (repository root, GPU machine): `{a.command}`; tables: '
            f'`bench/dwconv_slak_table.py` over the run\'s folder (`{archive}` beside this page).', '',
            f'Build: {first_line("build.txt")}. Machine: {first_line("nvidia-smi.txt")}.', '']
    left_out = runs_left_out(a.folder)
    if left_out:
        out += ['Not run (the time limit came first): ' + ', '.join(left_out) + '.', '']
    text = '\n'.join(out)
    if a.out:
        tmp = a.out + '.tmp'
        with open(tmp, 'w') as f:
            f.write(text)
        os.replace(tmp, a.out)
    else:
        sys.stdout.write(text)


if __name__ == '__main__':
    main()
