#!/usr/bin/env python3
"""Summary of one kernel's Nsight Compute source page: where its instructions and its stall samples go.

usage: scripts/ncu-source-summary.py SOURCE.csv[.gz] [--ops N] [--min-share PERCENT]

SOURCE.csv is `ncu --import REPORT.ncu-rep --page source --csv --print-source sass` of a report taken with
`--set full --import-source yes` (gzip accepted). Prints (1) the stall reasons' shares of all warp-state samples,
(2) per opcode: share of executed warp instructions, share of samples, shared-memory wavefronts (all / excess)
and its top stall reasons, (3) code regions - runs of consecutive instructions executed equally often (a loop body,
a prologue, an epilogue) - above --min-share of instructions or samples.
"""
import argparse
import collections
import csv
import gzip
import re
import sys


def number(row, ix, key):
    try:
        return float(row[ix[key]])
    except (KeyError, ValueError, IndexError):
        return 0.0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('csv')
    ap.add_argument('--ops', type=int, default=20, help='opcodes to list (default 20)')
    ap.add_argument('--min-share', type=float, default=1.0, help='regions to list, in %% (default 1)')
    a = ap.parse_args()
    opener = gzip.open if a.csv.endswith('.gz') else open
    try:
        with opener(a.csv, 'rt', newline='') as f:
            rows = list(csv.reader(f))
    except OSError as e:
        sys.exit(f'ncu-source-summary.py: cannot read {a.csv}: {e}')
    head = next((i for i, r in enumerate(rows) if r[:2] == ['Address', 'Source']), None)
    if head is None:
        sys.exit(f'ncu-source-summary.py: {a.csv} has no "Address","Source" header (not a --page source --csv file)')
    hdr, data = rows[head], [r for r in rows[head + 1:] if len(r) == len(rows[head])]
    ix = {h: i for i, h in enumerate(hdr)}
    samples_key, exec_key = 'Warp Stall Sampling (All Samples)', 'Instructions Executed'
    stalls = [h for h in hdr if h.startswith('stall_') and 'Not Issued' not in h]
    total_s = sum(number(r, ix, samples_key) for r in data) or 1.0
    total_e = sum(number(r, ix, exec_key) for r in data) or 1.0
    if len(rows[0]) > 1:
        print(rows[0][1])
    print(f'{total_e:.0f} warp instructions executed, {total_s:.0f} stall samples')

    by_reason = {h: sum(number(r, ix, h) for r in data) for h in stalls}
    print('stall reasons (share of samples): ' + ', '.join(
        f'{h[6:]} {100 * v / total_s:.1f}%' for h, v in sorted(by_reason.items(), key=lambda kv: -kv[1]) if v > 0))

    ops = collections.defaultdict(collections.Counter)
    for r in data:
        src = r[ix['Source']].strip()
        op = re.sub(r'^@!?U?P\w+\s+', '', src).split(' ')[0].split('.')[0]
        c = ops[op]
        c['exec'] += number(r, ix, exec_key)
        c['samples'] += number(r, ix, samples_key)
        c['wf'] += number(r, ix, 'L1 Wavefronts Shared')
        c['excess'] += number(r, ix, 'L1 Wavefronts Shared Excessive')
        for h in stalls:
            c[h] += number(r, ix, h)
    print(f"\n{'opcode':10s} {'instr%':>7s} {'samples%':>9s} {'smem wavefronts':>16s} {'excess':>11s}  top stalls (% of all samples)")
    for op, c in sorted(ops.items(), key=lambda kv: -kv[1]['samples'])[:a.ops]:
        top = sorted(stalls, key=lambda h: -c[h])[:4]
        print(f"{op:10s} {100 * c['exec'] / total_e:7.1f} {100 * c['samples'] / total_s:9.1f} {c['wf']:16.0f} "
              f"{c['excess']:11.0f}  " + ' '.join(f'{h[6:]} {100 * c[h] / total_s:.1f}' for h in top if c[h] > 0))

    print(f"\n{'region (offsets)':>17s} {'instrs':>6s} {'runs each':>10s} {'instr%':>7s} {'samples%':>9s}  first opcodes")
    base = int(data[0][ix['Address']], 16)
    region = None
    regions = []
    for r in data:
        off = int(r[ix['Address']], 16) - base
        e, s = number(r, ix, exec_key), number(r, ix, samples_key)
        op = r[ix['Source']].strip().split(' ')[0]
        if region and abs(e - region['e']) <= 0.02 * max(e, 1):
            region['end'] = off
            region['n'] += 1
            region['s'] += s
            region['ops'].append(op)
        else:
            region = {'start': off, 'end': off, 'e': e, 'n': 1, 's': s, 'ops': [op]}
            regions.append(region)
    for g in regions:
        ie, ss = 100 * g['e'] * g['n'] / total_e, 100 * g['s'] / total_s
        if ie >= a.min_share or ss >= a.min_share:
            print(f"{g['start']:7x}-{g['end']:7x}  {g['n']:6d} {g['e']:10.0f} {ie:7.1f} {ss:9.1f}  {' '.join(g['ops'][:5])}")


if __name__ == '__main__':
    main()
