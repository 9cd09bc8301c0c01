#!/usr/bin/env python3
"""What PyTorch runs for a depthwise convolution, per op, on dwconv-bench's points.

  dwconv_torch.py --dtype f32|f16 --maps 128x64x64x256,... --filters 3,5,... --ops fwd,bdc,bfc --out torch.csv
                  [--reps 10] [--warmup 2] [--point-seconds 3] [--point-timeout 60] [--deadline EPOCH_S]
                  [--device cuda|cpu]

The same convolution as apps/dwconv-bench (NHWC map N x H x W x C, C groups, odd square filter, stride 1, 'same'
padding, U(-1,1) inputs) through PyTorch as a user runs it: channels_last tensors, torch.backends.cudnn.benchmark on
(PyTorch picks its algorithm on the first call of a shape), TF32 off (the FP32 baseline is FP32 arithmetic, as in
dwconv-bench). fwd is F.conv2d; bdc and bfc are aten.convolution_backward with the output mask of the input or the
weight gradient, the call autograd makes for each.

Timing: the first call (PyTorch's algorithm search) and --warmup - 1 more are untimed; then one synchronised run
sets the repetition count (--reps, fewer when the runs would exceed --point-seconds, at least 3), and that many runs
are queued back to back on one stream, each between its own pair of CUDA events; the median is reported. When one
input is smaller than twice the L2 cache, enough copies are allocated that successive runs cycle through more than
twice L2 (the sweep's maps are all larger).

Rows are appended to --out as each point finishes (columns: op,map,filter,dtype,ms,reps,error,torch,cudnn), so a run
that is stopped keeps what it measured; points already in --out are skipped, which lets a caller rerun the same
command after a stop. A point still running after --point-timeout seconds gets a row with the error 'timeout' and the
process exits with status 3 (a call into cuDNN cannot be interrupted); rerun to continue with the next point. No
point is started after --deadline (seconds since the epoch); the exit status is then 4. --device cpu runs the same
code on the CPU with wall-clock timing, to check the script on a machine without a GPU.
"""
import argparse
import csv
import os
import statistics
import sys
import threading
import time

import torch
import torch.nn.functional as F

COLUMNS = ['op', 'map', 'filter', 'dtype', 'ms', 'reps', 'error', 'torch', 'cudnn']
OPS = ('fwd', 'bdc', 'bfc')


def fail(msg):
    sys.exit(f'dwconv_torch.py: {msg}')


def parse_list(text, flag, item):
    out = []
    for t in text.split(','):
        try:
            out.append(item(t))
        except ValueError as e:
            fail(f"{flag}: bad item '{t}' in '{text}': {e}")
    return out


def parse_map(t):
    dims = t.split('x')
    if len(dims) != 4 or not all(d.isdigit() and int(d) > 0 for d in dims):
        raise ValueError('expected NxHxWxC with positive integers')
    return t


def parse_filter(t):
    f = int(t)
    if f < 1 or f % 2 == 0:
        raise ValueError("expected an odd size ('same' padding F/2 on each side)")
    return f


def parse_op(t):
    if t not in OPS:
        raise ValueError(f'expected one of {", ".join(OPS)}')
    return t


def done_points(path):
    """(op, map, filter) of the rows already in the output file."""
    if not os.path.exists(path):
        return set()
    with open(path, newline='') as f:
        r = csv.DictReader(f)
        if r.fieldnames != COLUMNS:
            fail(f'--out: {path} exists with columns {r.fieldnames}, expected {COLUMNS}')
        return {(row['op'], row['map'], row['filter']) for row in r}


class Writer:
    """Appends rows, flushed and fsynced one by one, so that an exit leaves only whole rows."""

    def __init__(self, path, versions):
        new = not os.path.exists(path)
        self.f = open(path, 'a', newline='')
        self.w = csv.DictWriter(self.f, COLUMNS)
        self.versions = versions
        self.lock = threading.Lock()
        if new:
            self.w.writeheader()
            self._flush()

    def _flush(self):
        self.f.flush()
        os.fsync(self.f.fileno())

    def row(self, op, m, f, dtype, ms='', reps='', error=''):
        with self.lock:
            self.w.writerow({'op': op, 'map': m, 'filter': f, 'dtype': dtype, 'ms': ms, 'reps': reps,
                             'error': error, **self.versions})
            self._flush()


class Point:
    """Rotated operands of one (map, filter) and a callable per op."""

    def __init__(self, m, f, dtype, device):
        n, h, w, c = (int(d) for d in m.split('x'))
        self.pad = f // 2
        self.groups = c
        elems_bytes = n * h * w * c * torch.tensor([], dtype=dtype).element_size()
        copies = 1
        if device.type == 'cuda':
            l2 = getattr(torch.cuda.get_device_properties(device), 'L2_cache_size', 0) or 64 << 20
            if elems_bytes < 2 * l2:
                copies = -(-2 * l2 // elems_bytes) + 1
        cl = torch.channels_last
        gen = torch.Generator(device=device).manual_seed(20261201 + f)

        def uniform(*shape):
            return (torch.rand(*shape, generator=gen, device=device) * 2 - 1).to(dtype).contiguous(memory_format=cl)

        self.x = [uniform(n, c, h, w) for _ in range(copies)]
        self.dy = [uniform(n, c, h, w) for _ in range(copies)]
        self.w = uniform(c, 1, f, f)
        self.copies = copies

    def run(self, op, i):
        x, dy = self.x[i % self.copies], self.dy[i % self.copies]
        p, g = [self.pad, self.pad], self.groups
        if op == 'fwd':
            return F.conv2d(x, self.w, padding=self.pad, groups=g)
        mask = [op == 'bdc', op == 'bfc', False]
        return torch.ops.aten.convolution_backward(dy, x, self.w, None, [1, 1], p, [1, 1], False, [0, 0], g, mask)


def time_point(pt, op, device, reps, warmup, point_seconds):
    """Median ms over the runs and the number of runs."""
    with torch.no_grad():
        for i in range(max(warmup, 1)):
            pt.run(op, i)
        if device.type != 'cuda':
            times = []
            for i in range(reps):
                t0 = time.perf_counter()
                pt.run(op, i)
                times.append((time.perf_counter() - t0) * 1e3)
            return statistics.median(times), reps
        torch.cuda.synchronize(device)
        t0 = time.perf_counter()
        pt.run(op, 0)
        torch.cuda.synchronize(device)
        once = time.perf_counter() - t0
        n = max(3, min(reps, int(point_seconds / max(once, 1e-9))))
        ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(n)]
        for i, (a, b) in enumerate(ev):
            a.record()
            pt.run(op, i + 1)
            b.record()
        torch.cuda.synchronize(device)
        return statistics.median(a.elapsed_time(b) for a, b in ev), n


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--dtype', choices=['f32', 'f16'], required=True)
    ap.add_argument('--maps', default='128x128x128x128,128x64x64x256,128x32x32x1024')
    ap.add_argument('--filters', default='3,5,7,9,13,17,31,51')
    ap.add_argument('--ops', default='fwd,bdc,bfc')
    ap.add_argument('--out', required=True)
    ap.add_argument('--reps', type=int, default=10)
    ap.add_argument('--warmup', type=int, default=2)
    ap.add_argument('--point-seconds', type=float, default=3.0)
    ap.add_argument('--point-timeout', type=float, default=60.0)
    ap.add_argument('--deadline', type=float, default=0.0)
    ap.add_argument('--device', choices=['cuda', 'cpu'], default='cuda')
    a = ap.parse_args()
    for flag, v in (('--reps', a.reps), ('--point-seconds', a.point_seconds), ('--point-timeout', a.point_timeout)):
        if v <= 0:
            fail(f'{flag}: expected > 0, got {v}')
    if a.warmup < 0:
        fail(f'--warmup: expected >= 0, got {a.warmup}')
    maps = parse_list(a.maps, '--maps', parse_map)
    filters = parse_list(a.filters, '--filters', parse_filter)
    ops = parse_list(a.ops, '--ops', parse_op)
    if a.device == 'cuda' and not torch.cuda.is_available():
        fail('--device cuda: PyTorch sees no CUDA device')
    device = torch.device(a.device)
    dtype = {'f32': torch.float32, 'f16': torch.float16}[a.dtype]
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    versions = {'torch': torch.__version__, 'cudnn': torch.backends.cudnn.version() if a.device == 'cuda' else ''}
    if a.device == 'cuda':
        print(f'device: {torch.cuda.get_device_name(device)}; torch {versions["torch"]}, cuDNN {versions["cudnn"]}, '
              f'CUDA {torch.version.cuda}; channels_last, cudnn.benchmark, TF32 off', flush=True)
    done = done_points(a.out)
    writer = Writer(a.out, versions)
    current = {}  # the point being timed and its start, shared with the watchdog under `lock`
    lock = threading.Lock()

    def watchdog():
        while True:
            time.sleep(1)
            with lock:
                key, started = current.get('key'), current.get('t', 0)
                if key and time.monotonic() - started > a.point_timeout:
                    writer.row(*key, a.dtype, error=f'timeout after {a.point_timeout:g} s')
                    print(f'{key[0]} {key[1]} F={key[2]}: timeout after {a.point_timeout:g} s', flush=True)
                    os._exit(3)

    threading.Thread(target=watchdog, daemon=True).start()
    for m in maps:
        for f in filters:
            todo = [op for op in ops if (op, m, str(f)) not in done]
            if not todo:
                continue
            pt = Point(m, f, dtype, device)
            for op in todo:
                if a.deadline and time.time() > a.deadline:
                    print(f'deadline reached before {op} {m} F={f}', flush=True)
                    sys.exit(4)
                with lock:
                    current.update(key=(op, m, f), t=time.monotonic())
                try:
                    ms, n = time_point(pt, op, device, a.reps, a.warmup, a.point_seconds)
                    result = {'ms': f'{ms:.4f}', 'reps': n}
                    text = f'{ms:.3f} ms (median of {n})'
                except RuntimeError as e:  # e.g. out of memory: recorded, the sweep goes on
                    result = {'error': str(e).splitlines()[0][:200]}
                    text = f"error: {result['error']}"
                with lock:
                    current.clear()
                    writer.row(op, m, f, a.dtype, **result)
                print(f'{op} {m} F={f}: {text}', flush=True)
            del pt
            if device.type == 'cuda':
                torch.cuda.empty_cache()


if __name__ == '__main__':
    main()
