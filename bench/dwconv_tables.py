#!/usr/bin/env python3
"""The depthwise perf page of one run of bench/dwconv_h200_tables.sh.

  dwconv_tables.py page f32|f16 PREFIX > page.md

PREFIX names the run's files: PREFIX.csv.gz (dwconv-bench rows), PREFIX.torch.csv.gz (bench/dwconv_torch.py rows),
PREFIX.log.gz (the run's settings and logs) and, for f16, PREFIX.extra.csv.gz (backward-filter with hybrid
accumulation, and our FP32 forward at >= 13x13, from the same run). Nothing else is read: the page is that one run.

Per op, a table of every point: our time, TFLOP/s, the fraction of the copy rate (F <= 5) or of cuBLAS SGEMM
(F >= 13) measured in the same run, the fastest cuDNN candidate (legacy algorithms or backend engines; a dagger when
its output failed the FP64 check), PyTorch's time, and our speedup over each and over the faster of the two. Ratios
below 1 are bold. Then the geometric means and the bars of the FP32 / FP16 issues.
"""
import argparse
import csv
import gzip
import math
import os
import re
import sys

MAPS = ['128x128x128x128', '128x64x64x256', '128x32x32x1024']
FILTERS = [3, 5, 7, 9, 13, 17, 31, 51]
OPS = {'fwd': 'Forward', 'bdc': 'Backward-data', 'bfc': 'Backward-filter'}


def fail(msg):
    sys.exit(f'dwconv_tables.py: {msg}')


def read_csv(path, required):
    """Rows of a gzipped CSV, or [] when the file is optional and absent."""
    if not os.path.exists(path):
        if required:
            fail(f'{path} not found (expected the files of one bench/dwconv_h200_tables.sh run)')
        return []
    try:
        with gzip.open(path, 'rt', newline='') as f:
            rows = list(csv.DictReader(f))
    except (OSError, csv.Error, EOFError) as e:
        fail(f'cannot read {path}: {e}')
    for r in rows:
        if r.get('stride') not in (None, '', '1'):
            fail(f"{path}: a stride-{r['stride']} row; the tables are the stride-1 sweep")
    return rows


def read_log(path):
    """(settings lines, dwconv-bench device line, protocol line, {(op, map, F): True if the probe budget ran out})."""
    if not os.path.exists(path):
        fail(f'{path} not found')
    settings, device, protocol, budget = [], '', '', {}
    section, point = '', None
    with gzip.open(path, 'rt', errors='replace') as f:
        for line in f:
            line = line.rstrip('\n')
            if line.startswith('==== '):
                section = line[5:]
                continue
            if section == 'settings':
                settings.append(line)
                continue
            if not device and line.startswith('device 0:'):
                device = line[len('device 0: '):]
            if not protocol and line.startswith('protocol:'):
                protocol = line[len('protocol: '):]
            m = re.match(r'^(fwd|bdc|bfc) (\S+) F=(\d+)$', line)
            if m and section.startswith('bench_'):
                point = (m.group(1), m.group(2), int(m.group(3)))
            elif point and 'probe budget of' in line:
                budget[point] = True
    return settings, device, protocol, budget


def num(row, key):
    v = row.get(key, '') if row else ''
    return float(v) if v not in ('', None) else None


def ratio(v, bold_below=1.0):
    if v is None:
        return '-'
    s = f'{v:.2f}' if v < 10 else f'{v:.1f}' if v < 100 else f'{v:.0f}'
    return f'**{s}**' if v < bold_below else s


def ms_text(v):
    return '-' if v is None else f'{v:.3f}' if v < 10 else f'{v:.1f}' if v < 1000 else f'{v:.0f}'


def geomean(v):
    return math.exp(sum(map(math.log, v)) / len(v)) if v else None


def tolerance(dt, op, f):
    """dwconv-bench's check tolerance (apps/dwconv-bench/sampled_check.cpp): 2e-2; FP16 forward and backward-data
    add 1.5e-5 per filter tap for the tensor cores' truncating accumulation."""
    return 2e-2 + (1.5e-5 * f * f if dt == 'f16' and op != 'bfc' else 0)


class Run:
    def __init__(self, dt, prefix):
        self.dt = dt
        self.prefix = prefix
        self.ours = {(r['op'], r['map'], int(r['filter'])): r for r in read_csv(prefix + '.csv.gz', True)}
        self.torch = {(r['op'], r['map'], int(r['filter'])): r for r in read_csv(prefix + '.torch.csv.gz', False)}
        extra = read_csv(prefix + '.extra.csv.gz', False) if dt == 'f16' else []
        self.ha = {(r['map'], int(r['filter'])): r for r in extra if r['run'] == 'ha'}
        self.f32 = {(r['map'], int(r['filter'])): r for r in extra if r['run'] == 'f32'}
        self.settings, self.device, self.protocol, self.budget = read_log(prefix + '.log.gz')
        self.maps = [m for m in MAPS if any(k[1] == m for k in self.ours)]
        self.maps += sorted({k[1] for k in self.ours} - set(self.maps))
        self.filters = sorted({k[2] for k in self.ours})

    def point(self, op, m, f):
        """Everything the tables need about one point, or None when it was not measured."""
        r = self.ours.get((op, m, f))
        if r is None or r.get('error') or num(r, 'ms') is None:
            return None
        ms, cud = num(r, 'ms'), num(r, 'cudnn_ms')
        t = self.torch.get((op, m, f))
        tms = num(t, 'ms') if t and not t.get('error') else None
        base = min(v for v in (cud, tms) if v is not None) if (cud or tms) else None
        err = num(r, 'cudnn_max_rel_err')
        return {
            'ms': ms, 'tflops': num(r, 'tflops'), 'copy': num(r, 'frac_copy'), 'sgemm': num(r, 'frac_sgemm'),
            'cudnn': cud, 'algo': r.get('cudnn_algo', '').replace('graph ', '').replace('IMPLICIT_PRECOMP_GEMM', 'IPG'),
            'cudnn_bad': err is not None and err > tolerance(self.dt, op, f),
            'torch': tms, 'torch_error': (t or {}).get('error', ''), 'base': base,
            'x_cudnn': cud / ms if cud else None, 'x_torch': tms / ms if tms else None,
            'x_base': base / ms if base else None, 'path': r.get('path', ''), 'mare': num(r, 'mare'),
        }


def header(run):
    s = dict(line.split(': ', 1) for line in run.settings if ': ' in line)
    title = {'f32': 'Flash-DWC FP32', 'f16': 'Flash-DWC FP16 (FP32 accumulation)'}[run.dt]
    name = os.path.basename(run.prefix)
    out = [f'# {title} on the H200', '',
           'The paper\'s sweep (3 feature maps x 8 filters x forward, backward-data, backward-filter; NHWC, stride 1, '
           '\'same\' padding) against the fastest cuDNN candidate (legacy algorithms and backend-API engines) and '
           'against what PyTorch runs for the same op, all measured in one run of one build. Protocol and columns: '
           '[README.md](README.md); the kernels: [../dwconv-fp32.md](../dwconv-fp32.md), '
           '[../dwconv-fp16.md](../dwconv-fp16.md), [../dwconv-bfc.md](../dwconv-bfc.md).', '',
           f"- Run: `{s.get('command', '?')}` (on the GPU machine, bundle carried)",
           f"- Build: {s.get('build', '?')}; GPU: {run.device or s.get('gpu', '?')}; run {s.get('date', '?')}",
           f'- Protocol as printed: {run.protocol or "?"}']
    tv = {(r['torch'], r['cudnn']) for r in run.torch.values()}
    if tv:
        out.append('- PyTorch ' + ', '.join(f'{t} (cuDNN {c})' for t, c in sorted(tv)) +
                   ': `bench/dwconv_torch.py` (channels_last, cudnn.benchmark, TF32 off, CUDA events, median)')
    else:
        out.append('- PyTorch: not measured in this run')
    for line in run.settings:
        if line.startswith('note: '):
            out.append(f'- {line[6:]}')
    out += [f'- Raw files: `{name}.csv.gz` (dwconv-bench)' +
            (f', `{name}.torch.csv.gz` (PyTorch)' if run.torch else '') +
            (f', `{name}.extra.csv.gz` (hybrid accumulation, our FP32 forward)' if run.ha or run.f32 else '') +
            f', `{name}.log.gz` (every log)',
            f'- This page: `python3 bench/dwconv_tables.py page {run.dt} docs/perf/{name} > docs/perf/{name}.md`', '']
    return out


def op_table(run, op):
    out = [f'## {OPS[op]}', '']
    ha = run.dt == 'f16' and op == 'bfc' and run.ha
    head = ('| map | F | ms | TFLOP/s | % copy / SGEMM | cuDNN ms (winner) | x cuDNN | PyTorch ms | x PyTorch | '
            'x faster of both |')
    rule = '|---|---|---|---|---|---|---|---|---|---|'
    if ha:
        head += ' ha ms | fp32 / ha |'
        rule += '---|---|'
    out += [head + ' kernel |', rule + '---|']
    last = None
    for m in run.maps:
        for f in run.filters:
            p = run.point(op, m, f)
            label = m if m != last else ''
            last = m
            if p is None:
                r = run.ours.get((op, m, f))
                why = f"error: {r['error']}" if r and r.get('error') else 'not measured'
                out.append(f'| {label} | {f} | {why} |' + ' |' * (8 + (2 if ha else 0)))
                continue
            frac = p['copy'] if f <= 5 else p['sgemm'] if f >= 13 else None
            frac_s = f"{frac * 100:.0f}% {'copy' if f <= 5 else 'SGEMM'}" if frac is not None else ''
            cud = (f"{ms_text(p['cudnn'])} ({p['algo']}{' †' if p['cudnn_bad'] else ''})"
                   if p['cudnn'] else '-')
            torch_s = ms_text(p['torch']) if p['torch'] else (p['torch_error'][:40] or '-')
            row = (f"| {label} | {f} | {ms_text(p['ms'])} | {p['tflops']:.1f} | {frac_s} | {cud} | "
                   f"{ratio(p['x_cudnn'])} | {torch_s} | {ratio(p['x_torch'])} | {ratio(p['x_base'])} |")
            if ha:
                h = run.ha.get((m, f))
                hms = num(h, 'ms')
                row += f" {ms_text(hms)} | {ratio(p['ms'] / hms if hms else None, 0)} |"
            path = re.sub(r'^(fwd|bdc|bfc) (f16 )?', '', p['path'])
            out.append(row + f' {path} |')
    return out + ['']


def grouped(run, pred):
    """'op map: F, F; ...' for the points whose point() satisfies pred."""
    parts = []
    for op in OPS:
        for m in run.maps:
            fs = [str(f) for f in run.filters if pred(run.point(op, m, f))]
            if fs:
                parts.append(f"{op} {m}: {', '.join(fs)}")
    return '; '.join(parts)


def summary(run):
    out = ['## Summary', '',
           '| op | points | x cuDNN geomean (min) | x PyTorch geomean (min) | x faster of both geomean (min) | '
           'slower than the faster of both |', '|---|---|---|---|---|---|']
    stats = {}
    for op in OPS:
        pts = [(m, f, run.point(op, m, f)) for m in run.maps for f in run.filters]
        pts = [(m, f, p) for m, f, p in pts if p]
        stats[op] = pts
        if not pts:
            continue
        cells = []
        for key in ('x_cudnn', 'x_torch', 'x_base'):
            v = [p[key] for _, _, p in pts if p[key]]
            cells.append(f'{geomean(v):.2f}x ({min(v):.2f}x) over {len(v)}' if v else '-')
        slow = ', '.join(f"{m}/{f}x{f} {p['x_base']:.2f}x" for m, f, p in pts if p['x_base'] and p['x_base'] < 1)
        out.append(f"| {op} | {len(pts)} | {' | '.join(cells)} | {slow or 'none'} |")
    out.append('')
    missing = grouped(run, lambda p: p is None)
    no_torch = grouped(run, lambda p: p is not None and p['torch'] is None)
    bad = sum(1 for op in OPS for _, _, p in stats[op] if p['cudnn_bad'])
    if missing:
        out.append(f'Not measured in this run: {missing}.')
    if no_torch:
        out.append(f'Without a PyTorch time: {no_torch}.')
    if bad:
        out.append(f'At {bad} points the fastest cuDNN candidate failed the FP64 check (†, FP16-accumulating engines '
                   'over long reductions); it stays the baseline, as the protocol says.')
    if run.budget:
        out.append(f'At {len(run.budget)} points the engine search reached its probe budget before every engine was '
                   'probed (the log names the engines left out).')
    return out + [''], stats


def bars(run, stats):
    out = ['## Bars', '']
    geo = {op: geomean([p['x_cudnn'] for _, _, p in stats[op] if p['x_cudnn']]) for op in OPS}

    def never_slower(op):
        v = [(m, f, p['x_cudnn']) for m, f, p in stats[op] if p['x_cudnn']]
        slow = [f'{m}/{f}x{f} {x:.2f}x' for m, f, x in v if x < 1]
        return f"{'met' if not slow else 'MISSED: ' + ', '.join(slow)} ({len(v)} points, minimum " \
               f"{min(x for _, _, x in v):.2f}x)" if v else 'not measured'

    def met(ok):
        return 'met' if ok else 'MISSED'

    if run.dt == 'f32':
        for op in OPS:
            if not stats[op]:
                continue
            copy = [p['copy'] for m, f, p in stats[op] if f <= 5 and p['copy'] is not None]
            sg = [p['sgemm'] for m, f, p in stats[op] if f >= 13 and p['sgemm'] is not None]
            out.append(f'- {op}: never slower than cuDNN: {never_slower(op)}; geomean >= 5x: '
                       f"{met(geo[op] and geo[op] >= 5)} ({geo[op]:.2f}x)" +
                       (f'; >= 80% of copy at <= 5x5: {met(min(copy) >= 0.8)} ({min(copy) * 100:.0f}-'
                        f'{max(copy) * 100:.0f}%)' if copy else '') +
                       (f'; >= 70% of SGEMM at >= 13x13: {met(min(sg) >= 0.7)} ({min(sg) * 100:.0f}-'
                        f'{max(sg) * 100:.0f}%)' if sg else ''))
        return out + ['']
    for op in OPS:
        if stats[op]:
            line = f'- {op}: never slower than cuDNN: {never_slower(op)}'
            if op != 'bfc':
                line += f"; geomean >= 8x: {met(geo[op] >= 8)} ({geo[op]:.2f}x)"
            out.append(line)
    x32 = [(m, f, num(run.f32[(m, f)], 'ms') / p['ms']) for m, f, p in stats['fwd'] if f >= 13 and (m, f) in run.f32]
    if x32:
        v = [x for _, _, x in x32]
        out.append(f'- FP16 forward >= 2x our FP32 forward at >= 13x13 (same run): {met(min(v) >= 2)} '
                   f'({min(v):.2f}-{max(v):.2f}x)')
    tf = [p['tflops'] for m, f, p in stats['fwd'] if f >= 31]
    if tf:
        out.append(f'- >= 80 TFLOP/s forward at >= 31x31: {met(min(tf) >= 80)} ({min(tf):.0f}-{max(tf):.0f})')
    hv = [p['ms'] / num(run.ha[(m, f)], 'ms') for m, f, p in stats['bfc'] if f >= 7 and (m, f) in run.ha]
    if hv:
        out.append(f'- Hybrid accumulation >= 1.2x FP32 accumulation at >= 7x7: {met(min(hv) >= 1.2)} '
                   f'({min(hv):.2f}-{max(hv):.2f}x, geomean {geomean(hv):.2f}x)')
    return out + ['']


def page(a):
    run = Run(a.dtype, a.prefix)
    if not run.ours:
        fail(f'{a.prefix}.csv.gz holds no rows')
    lines = header(run)
    s, stats = summary(run)
    lines += s + bars(run, stats)
    for op in OPS:
        if stats[op] or any(k[0] == op for k in run.ours):
            lines += op_table(run, op)
    print('\n'.join(lines).rstrip('\n'))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest='cmd', required=True)
    p = sub.add_parser('page', help='the perf page of one run')
    p.add_argument('dtype', choices=['f32', 'f16'])
    p.add_argument('prefix', help='path of the run\'s files without .csv.gz / .torch.csv.gz / .log.gz')
    a = ap.parse_args()
    page(a)


if __name__ == '__main__':
    main()
