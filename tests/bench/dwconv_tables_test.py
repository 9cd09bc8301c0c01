#!/usr/bin/env python3
"""bench/dwconv_tables.py page: one run's files -> the perf page (ratios, geomeans, missing points, bars, errors)."""
import csv
import gzip
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, 'bench', 'dwconv_tables.py')
BENCH_COLS = ['op', 'map', 'filter', 'ms', 'tflops', 'gbps', 'cudnn_ms', 'cudnn_algo', 'speedup', 'sgemm_m',
              'sgemm_tflops', 'frac_sgemm', 'copy_gbps', 'frac_copy', 'max_rel_err', 'cudnn_max_rel_err', 'mare',
              'cudnn_mare', 'path', 'reps', 'error', 'cudnn_ok_ms', 'cudnn_ok_algo', 'speedup_ok', 'stride']
TORCH_COLS = ['op', 'map', 'filter', 'dtype', 'ms', 'reps', 'error', 'torch', 'cudnn']
MAP = '128x64x64x256'


def write_gz(path, cols, rows):
    with gzip.open(path, 'wt', newline='') as f:
        w = csv.DictWriter(f, cols)
        w.writeheader()
        for r in rows:
            w.writerow({c: r.get(c, '') for c in cols})


def bench_row(op, f, ms, cudnn_ms, **kw):
    return {'op': op, 'map': MAP, 'filter': f, 'ms': ms, 'tflops': 10.0, 'cudnn_ms': cudnn_ms,
            'cudnn_algo': 'graph eng80+rtc', 'frac_copy': 0.8, 'frac_sgemm': 0.7, 'path': f'{op} gemv FW={f}',
            'stride': 1, 'cudnn_max_rel_err': 1e-4, **kw}


class PageTest(unittest.TestCase):
    def run_page(self, bench, torch, stride_row=False):
        d = tempfile.mkdtemp()
        prefix = os.path.join(d, 'dwconv-fp32-h200')
        if stride_row:
            bench = bench + [dict(bench_row('fwd', 7, 1.0, 2.0), stride=2)]
        write_gz(prefix + '.csv.gz', BENCH_COLS, bench)
        write_gz(prefix + '.torch.csv.gz', TORCH_COLS, torch)
        with gzip.open(prefix + '.log.gz', 'wt') as f:
            f.write('==== settings\ncommand: bench/dwconv_h200_tables.sh f32\nbuild: abc\nnote: stopped at the time '
                    'limit: bench_x\n==== bench_a.log\ndevice 0: Test GPU\nfwd 128x64x64x256 F=3\n'
                    '  cudnn engines timed: eng1 1ms; skipped: eng2 (probe budget of 2000.000ms spent)\n')
        return subprocess.run([sys.executable, SCRIPT, 'page', 'f32', prefix], capture_output=True, text=True)

    def test_ratios_geomeans_and_missing_points(self):
        bench = [bench_row('fwd', 3, 1.0, 2.0), bench_row('fwd', 5, 1.0, 8.0),
                 bench_row('bdc', 3, 2.0, 1.0), dict(bench_row('bfc', 3, 1.0, 1.5), error='launch failed', ms='')]
        torch = [{'op': 'fwd', 'map': MAP, 'filter': 3, 'dtype': 'f32', 'ms': 0.5, 'reps': 10, 'torch': '2.11',
                  'cudnn': 91900},
                 {'op': 'fwd', 'map': MAP, 'filter': 5, 'dtype': 'f32', 'error': 'timeout after 60 s',
                  'torch': '2.11', 'cudnn': 91900}]
        r = self.run_page(bench, torch)
        self.assertEqual(r.returncode, 0, r.stderr)
        out = r.stdout
        # fwd: x cuDNN 2 and 8 (geomean 4); x PyTorch 0.5 at 3x3 only; faster of both 0.5 and 8 (geomean 2).
        self.assertIn('| fwd | 2 | 4.00x (2.00x) over 2 | 0.50x (0.50x) over 1 | 2.00x (0.50x) over 2 | '
                      '128x64x64x256/3x3 0.50x |', out)
        self.assertIn('| bdc | 1 | 0.50x (0.50x) over 1 |', out)
        self.assertIn('Not measured in this run: bdc 128x64x64x256: 5; bfc 128x64x64x256: 3, 5.', out)
        self.assertIn('error: launch failed', out)
        self.assertIn('| timeout after 60 s |', out)
        self.assertIn('- stopped at the time limit: bench_x', out)
        self.assertIn('At 1 points the engine search reached its probe budget', out)
        self.assertIn('bdc: never slower than cuDNN: MISSED: 128x64x64x256/3x3 0.50x', out)
        self.assertIn('**0.50**', out)

    def test_rejects_strided_rows_and_missing_files(self):
        r = self.run_page([bench_row('fwd', 3, 1.0, 2.0)], [], stride_row=True)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn('stride-2 row', r.stderr)
        r = subprocess.run([sys.executable, SCRIPT, 'page', 'f32', '/nonexistent/run'], capture_output=True, text=True)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn('/nonexistent/run.csv.gz not found', r.stderr)


if __name__ == '__main__':
    unittest.main()
