#!/usr/bin/env python3
"""Markdown tables of dwconv-bench CSVs, as in docs/perf/dwconv-fp16-h200.md.

  dwconv_tables.py fwdbdc --rows A.csv [B.csv ...] [--cudnn-fallback X.csv ...] [--before Y.csv ...] [--fp32 Z.csv ...]
  dwconv_tables.py bfc --rows A.csv ... --ha H.csv ... [--cudnn-fallback ...] [--before ...] [--before-ha ...]
  dwconv_tables.py f32 --rows A.csv ...      (all three ops of an FP32 sweep, with the cuDNN winner and the bars)
  dwconv_tables.py f16 --rows A.csv ...      (all three ops of an FP16 fp32-accumulation sweep, same columns; a
                                              cuDNN winner whose output failed the FP64 check is marked with a dagger)
  (f32 and f16 take --cudnn-fallback too)

--rows: our timings; a later file's point (op, map, filter) replaces an earlier one's. A point without a cuDNN time
in its own row takes it from --cudnn-fallback and is marked '*'. --before: the same points from an earlier run
(a 'before' column). --fp32: this project's FP32 forward (fwdbdc: 'x our FP32' = FP32 ms / FP16 ms). Ratios below
1 are bold; the last lines give the geometric means over cuDNN.
"""
import argparse
import csv
import math
import sys

MAPS = ['128x128x128x128', '128x64x64x256', '128x32x32x1024']
FILTERS = ['3', '5', '7', '9', '13', '17', '31', '51']


def load(paths):
    """(op, map, filter) -> (row, file stem) with later files winning."""
    out = {}
    for p in paths or []:
        try:
            with open(p, newline='') as f:
                for r in csv.DictReader(f):
                    # CSVs before --stride have no stride column; the tables are the paper's stride-1 sweep.
                    if r.get('stride') not in (None, '', '1'):
                        sys.exit(f"dwconv_tables.py: {p} holds stride-{r['stride']} rows; the tables cover stride 1")
                    out[(r['op'], r['map'], r['filter'])] = (r, p.rsplit('/', 1)[-1].split('_')[0])
        except (OSError, KeyError) as e:
            sys.exit(f'dwconv_tables.py: cannot read {p}: {e}')
    return out


def ratio_text(v, bold_below=1.0):
    s = f'{v:.2f}' if v < 10 else f'{v:.1f}' if v < 100 else f'{v:.0f}'
    return f'**{s}**' if v < bold_below else s


def cudnn_ms(row, fallback, key):
    """cuDNN time of a point and whether it came from the row's own run."""
    if row['cudnn_ms']:
        return float(row['cudnn_ms']), True
    if key not in fallback or not fallback[key][0]['cudnn_ms']:
        sys.exit(f'dwconv_tables.py: no cuDNN time for {key} (give --cudnn-fallback)')
    return float(fallback[key][0]['cudnn_ms']), False


def geomean(v):
    return math.exp(sum(map(math.log, v)) / len(v))


def points(rows, op):
    for m in MAPS:
        for f in FILTERS:
            if (op, m, f) in rows:
                yield m, f


def fwdbdc(a):
    rows, fb, before, fp32 = load(a.rows), load(a.cudnn_fallback), load(a.before), load(a.fp32)
    print('| map | F | fwd ms | TFLOP/s | x cuDNN | before (ms) | bdc ms | TFLOP/s | x cuDNN | fwd x our FP32 '
          '(same run) | max rel err fwd / bdc | run |')
    print('|---|---|---|---|---|---|---|---|---|---|---|---|')
    sp = {'fwd': [], 'bdc': []}
    last_map = None
    for m, f in points(rows, 'fwd'):
        (fr, src), (br, _) = rows[('fwd', m, f)], rows[('bdc', m, f)]
        cf, same_f = cudnn_ms(fr, fb, ('fwd', m, f))
        cb, same_b = cudnn_ms(br, fb, ('bdc', m, f))
        fms, bms = float(fr['ms']), float(br['ms'])
        sp['fwd'].append(cf / fms)
        sp['bdc'].append(cb / bms)
        was = f"{float(before[('fwd', m, f)][0]['ms']):.3f}" if ('fwd', m, f) in before else '-'
        x32 = ratio_text(float(fp32[('fwd', m, f)][0]['ms']) / fms, 2.0) if ('fwd', m, f) in fp32 else '-'
        print(f"| {m if m != last_map else ''} | {f} | {fms:.3f} | {float(fr['tflops']):.1f} | "
              f"{ratio_text(cf / fms)}{'' if same_f else '*'} | {was} | {bms:.3f} | {float(br['tflops']):.1f} | "
              f"{ratio_text(cb / bms)}{'' if same_b else '*'} | {x32} | "
              f"{float(fr['max_rel_err']):.1e} / {float(br['max_rel_err']):.1e} | {src} |")
        last_map = m
    for op, v in sp.items():
        print(f'\n{op}: geomean over cuDNN {geomean(v):.2f}x over {len(v)} points, minimum {min(v):.2f}x')


def mare_text(row):
    """A row's MARE, or '-' for a run without the FP64 check (--no-check)."""
    return f"{float(row['mare']):.1e}" if row and row['mare'] else '-'


def bfc(a):
    rows, ha, fb = load(a.rows), load(a.ha), load(a.cudnn_fallback)
    before, before_ha = load(a.before), load(a.before_ha)
    print('| map | F | fp32 ms | TFLOP/s | cuDNN ms | x cuDNN | before ms | ha ms | TFLOP/s | fp32 / ha | '
          'ha before ms | MARE fp32 / ha |')
    print('|---|---|---|---|---|---|---|---|---|---|---|---|')
    sp, speed = [], []
    last_map = None
    for m, f in points(rows, 'bfc'):
        key = ('bfc', m, f)
        r, h = rows[key][0], ha[key][0] if key in ha else None
        cud, same = cudnn_ms(r, fb, key)
        ms = float(r['ms'])
        sp.append(cud / ms)
        hms = float(h['ms']) if h else float('nan')
        if h and int(f) >= 7:
            speed.append(ms / hms)
        was = f"{float(before[key][0]['ms']):.3f}" if key in before else '-'
        was_ha = f"{float(before_ha[key][0]['ms']):.3f}" if key in before_ha else '-'
        cud_s = f'{cud:.3f}' if cud < 10 else f'{cud:.0f}'
        print(f"| {m if m != last_map else ''} | {f} | {ms:.3f} | {float(r['tflops']):.1f} | {cud_s}"
              f"{'' if same else '*'} | {ratio_text(cud / ms)} | {was} | "
              + (f"{hms:.3f} | {float(h['tflops']):.1f} | {ratio_text(ms / hms, 1.2 if int(f) >= 7 else 0)} | "
                 f"{was_ha} | {mare_text(r)} / {mare_text(h)} |" if h else
                 f"- | - | - | {was_ha} | {mare_text(r)} / - |"))
        last_map = m
    print(f'\nbfc: geomean over cuDNN {geomean(sp):.2f}x over {len(sp)} points, minimum {min(sp):.2f}x')
    if speed:
        print(f'fp32 / ha at >= 7x7: {min(speed):.2f}-{max(speed):.2f}x, geomean {geomean(speed):.2f}x, '
              f'{sum(v >= 1.2 for v in speed)} of {len(speed)} points >= 1.2x')


def check_tolerance_f16(op, f):
    """dwconv-bench's check tolerance for FP16 (sampled_check.cpp): fp32-accumulation backward-filter 2e-2, forward and
    backward-data 2e-2 + 1.5e-5 per filter tap."""
    return 2e-2 if op == 'bfc' else 2e-2 + 1.5e-5 * int(f) * int(f)


def sweep(a, f16):
    """One row per (map, filter) with every op present: TFLOP/s and speedup over the cuDNN winner (named)."""
    rows, fb = load(a.rows), load(a.cudnn_fallback)
    ops = ['fwd', 'bdc', 'bfc']
    head = ' | '.join(f'{op} TFLOP/s | x cuDNN (winner)' for op in ops)
    print(f'| map | F | {head} |')
    print('|---|---|' + '---|---|' * len(ops))
    sp = {op: [] for op in ops}
    copy = {op: [] for op in ops}
    sgemm = {op: [] for op in ops}
    last_map = None
    for m in MAPS:
        for f in FILTERS:
            if not any((op, m, f) in rows for op in ops):
                continue
            cells = []
            for op in ops:
                key = (op, m, f)
                if key not in rows or not (rows[key][0]['cudnn_ms'] or (key in fb and fb[key][0]['cudnn_ms'])):
                    cells.append('- | -')
                    continue
                r = rows[key][0]
                base_ms, own = cudnn_ms(r, fb, key)
                base = r if own else fb[key][0]  # the row whose cuDNN winner is reported
                x = base_ms / float(r['ms'])
                sp[op].append((x, m, f))
                if int(f) <= 5:
                    copy[op].append(float(r['frac_copy']))
                if int(f) >= 13:
                    sgemm[op].append(float(r['frac_sgemm']))
                bad = f16 and base['cudnn_max_rel_err'] and float(base['cudnn_max_rel_err']) > check_tolerance_f16(op, f)
                cells.append(f"{float(r['tflops']):.1f} | {ratio_text(x)}{'' if own else '*'} "
                             f"({short_algo(base['cudnn_algo'])}{' †' if bad else ''})")
            print(f"| {m if m != last_map else ''} | {f} | " + ' | '.join(cells) + ' |')
            last_map = m
    print()
    for op in ops:
        if not sp[op]:
            continue
        v = [x for x, _, _ in sp[op]]
        slow = ', '.join(f'{m}/F{f} {x:.2f}x' for x, m, f in sp[op] if x < 1) or 'none'
        line = (f'{op}: geomean over cuDNN {geomean(v):.2f}x over {len(v)} points, minimum {min(v):.2f}x; '
                f'slower: {slow}')
        if copy[op]:
            line += f'; F <= 5 copy fraction {min(copy[op]) * 100:.0f}-{max(copy[op]) * 100:.0f}%'
        if sgemm[op]:
            line += f'; F >= 13 SGEMM fraction {min(sgemm[op]) * 100:.0f}-{max(sgemm[op]) * 100:.0f}%'
        print(line)


def short_algo(name):
    return name.replace('graph ', '').replace('IMPLICIT_PRECOMP_GEMM', 'IPG')


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('table', choices=['fwdbdc', 'bfc', 'f32', 'f16'])
    ap.add_argument('--rows', nargs='+', required=True)
    ap.add_argument('--ha', nargs='+')
    ap.add_argument('--cudnn-fallback', nargs='+')
    ap.add_argument('--before', nargs='+')
    ap.add_argument('--before-ha', nargs='+')
    ap.add_argument('--fp32', nargs='+')
    a = ap.parse_args()
    if a.table == 'bfc' and not a.ha:
        ap.error('bfc needs --ha')
    {'fwdbdc': fwdbdc, 'bfc': bfc, 'f32': lambda a: sweep(a, False), 'f16': lambda a: sweep(a, True)}[a.table](a)


if __name__ == '__main__':
    main()
