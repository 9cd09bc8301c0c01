#!/usr/bin/env python3
"""bench/dwconv_slak_table.py: one slak_dwconv.sh folder -> the page (baselines, aligned twin, square, missing)."""
import csv
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, 'bench', 'dwconv_slak_table.py')
BENCH_COLS = ['op', 'map', 'filter', 'ms', 'cudnn_ms', 'cudnn_algo', 'path', 'error', 'cudnn_ok_ms', 'cudnn_ok_algo']
TORCH_COLS = ['op', 'map', 'filter', 'dtype', 'ms', 'reps', 'error', 'torch', 'cudnn']


def write(path, cols, rows):
    with open(path, 'w', newline='') as f:
        w = csv.DictWriter(f, cols)
        w.writeheader()
        for r in rows:
            w.writerow({c: r.get(c, '') for c in cols})


def ours(op, m, f, ms, cudnn_ms, padded=True):
    return {'op': op, 'map': m, 'filter': f, 'ms': ms, 'cudnn_ms': cudnn_ms, 'cudnn_ok_ms': cudnn_ms,
            'cudnn_ok_algo': 'eng0', 'path': f'{op} plan' + (' (channels padded 249->256)' if padded else '')}


class SlakTableTest(unittest.TestCase):
    def page(self, rows, torch_rows):
        d = tempfile.mkdtemp()
        write(os.path.join(d, 'ours_f16_64x32x32x249.csv'), BENCH_COLS, rows)
        write(os.path.join(d, 'torch_f16_64x32x32x249.csv'), TORCH_COLS, torch_rows)
        with open(os.path.join(d, 'build.txt'), 'w') as f:
            f.write('abc123\n')
        out = os.path.join(d, 'page.md')
        r = subprocess.run([sys.executable, SCRIPT, d, '--command', 'scripts/device/slak_dwconv.sh', '-o', out],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        return open(out).read()

    def test_ratios_twin_square_and_missing(self):
        odd, even = '64x32x32x249', '64x32x32x256'
        rows = [ours('fwd', odd, '49x5', 2.0, 8.0), ours('fwd', even, '49x5', 1.0, 8.0, padded=False),
                ours('fwd', odd, '15', 0.9, 4.0), ours('bdc', odd, '49x5', 3.0, 1.5)]
        torch_rows = [{'op': 'fwd', 'map': odd, 'filter': '49x5', 'dtype': 'f16', 'ms': 6.0}]
        text = self.page(rows, torch_rows)
        line = next(l for l in text.splitlines() if l.startswith('| fwd | 64x32x32x249 | 49x5 |'))
        self.assertIn('| 3.00x |', line)                      # the faster baseline (torch 6.0) over ours (2.0)
        self.assertIn('(padded)', line)
        self.assertIn(f'{(2.0 / 249) / (1.0 / 256):.2f}x (256)', line)  # per FLOP against the aligned twin
        self.assertIn(f'{(2.0 / 245) / (0.9 / 225):.2f}x (15x15)', line)  # per FLOP against the nearest square
        self.assertIn('slower than the faster of cuDNN and PyTorch: 1 point(s): bdc 64x32x32x249 49x5 (0.50x)', text)
        self.assertIn('Build: abc123', text)
        missing = next(l for l in text.splitlines() if 'comparison missing' in l)
        self.assertNotIn(': 0', missing)

    def test_runs_left_out_are_listed(self):
        # A twin kept in its own file (one run does so for every map, so a twin missing from it was cut off); no
        # PyTorch or pad=off files at all.
        d = tempfile.mkdtemp()
        for m, padded in (('64x32x32x249', True), ('64x32x32x256', False), ('64x16x16x499', True)):
            write(os.path.join(d, f'ours_f16_{m}.csv'), BENCH_COLS, [ours('fwd', m, '5', 1.0, 2.0, padded)])
        out = os.path.join(d, 'page.md')
        r = subprocess.run([sys.executable, SCRIPT, d, '--command', 'x', '-o', out], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn('Not run (the time limit came first): torch_f16_64x32x32x249, torch_f16_64x16x16x499, '
                      'ours_f16_64x16x16x504, padoff_f16_64x32x32x249, padoff_f16_64x16x16x499.', open(out).read())

    def test_empty_folder_is_an_error(self):
        r = subprocess.run([sys.executable, SCRIPT, tempfile.mkdtemp(), '--command', 'x'], capture_output=True,
                           text=True)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn('no ours_', r.stderr)


if __name__ == '__main__':
    unittest.main()
