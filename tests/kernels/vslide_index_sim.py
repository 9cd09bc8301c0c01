#!/usr/bin/env python3
# Host simulation of dwconv_vslide_kernel's index mapping (kernels/dwconv/cuda/fwd_vslide.cu: FP32, 4 channels per
# thread, FH and FW up to 3): runs the kernel's block/thread/row/slot logic in Python on small geometries (forward
# and the stride-1 backward-data geometry) and checks every output is written exactly once and equals the direct
# formula. Not part of ctest: run it after changing the kernel's tiling (`python3 tests/kernels/vslide_index_sim.py`).
import random
kThreads, kTM, kRows, kMaxLanesC, kCpt, kMaxF = 128, 4, 16, 32, 4, 3

def geometry(n, h, w, c, fh, fw, pt, pb, pl, pr, bdc=False):
    oh, ow = h + pt + pb - fh + 1, w + pl + pr - fw + 1
    if not bdc:
        return dict(n=n, in_h=h, in_w=w, c=c, out_h=oh, out_w=ow, fh=fh, fw=fw, pad_t=pt, pad_l=pl, flip=False)
    # backward-data stride 1: dY (oh, ow) -> dX (h, w), padding FH-1-pt, FW-1-pl, filter flipped
    return dict(n=n, in_h=oh, in_w=ow, c=c, out_h=h, out_w=w, fh=fh, fw=fw, pad_t=fh - 1 - pt, pad_l=fw - 1 - pl, flip=True)

def run_kernel(g, x, wt, bias):
    groups = g['c'] // kCpt
    lanes_c = min(groups, kMaxLanesC)
    strips = kThreads // lanes_c
    tiles_h = (g['out_h'] + kRows - 1) // kRows
    tiles_w = (g['out_w'] + strips * kTM - 1) // (strips * kTM)
    cblocks = (groups + lanes_c - 1) // lanes_c
    FH, FW = g['fh'], g['fw']
    kIn = kTM + FW - 1
    out = {}
    writes = {}
    for by in range(cblocks):
        for bx in range(g['n'] * tiles_h * tiles_w):
            tw = bx % tiles_w; b = bx // tiles_w; th = b % tiles_h; n = b // tiles_h
            # the block's filter slice in shared memory, [tap][lane][e], staged as the kernel does
            ws = [[[0.0] * kCpt for _ in range(kMaxLanesC)] for _ in range(FH * FW)]
            for job in range(FH * FW * lanes_c):
                tap, lane = job // lanes_c, job % lanes_c
                gg = by * lanes_c + lane
                i, j = tap // FW, tap % FW
                wi, wj = (FH - 1 - i, FW - 1 - j) if g['flip'] else (i, j)
                if gg < groups:
                    for e in range(kCpt):
                        ws[tap][lane][e] = wt[wi][wj][gg * kCpt + e]
            for t in range(kThreads):
                cg_local, strip = t % lanes_c, t // lanes_c
                cg = by * lanes_c + cg_local
                o0, ow0 = th * kRows, (tw * strips + strip) * kTM
                if strip >= strips or cg >= groups or ow0 >= g['out_w']:
                    continue
                rows = min(kRows, g['out_h'] - o0)
                for ch in range(cg * kCpt, cg * kCpt + kCpt):
                    wf = [[ws[i * FW + j][cg_local][ch - cg * kCpt] for j in range(FW)] for i in range(FH)]
                    acc = [[0.0] * kTM for _ in range(FH)]
                    ih0, col0 = o0 - g['pad_t'], ow0 - g['pad_l']
                    k_end = rows + FH - 1
                    def load(k):
                        ih = ih0 + k
                        r = []
                        for u in range(kIn):
                            iw = col0 + u
                            ok = 0 <= ih < g['in_h'] and 0 <= iw < g['in_w']
                            r.append(x[n][ih][iw][ch] if ok else 0.0)
                        return r
                    raw = load(0)
                    kb = 0
                    while kb < k_end:
                        for kk in range(FH):
                            k = kb + kk
                            if k >= k_end: break
                            xf = raw
                            if k + 1 < k_end: raw = load(k + 1)
                            for i in range(FH):
                                q = k - i
                                if q < 0 or q >= rows: continue
                                s = (kk - i + FH) % FH
                                for j in range(FW):
                                    for m in range(kTM):
                                        acc[s][m] += xf[m + j] * wf[i][j]
                            qd = k - (FH - 1)
                            if 0 <= qd < rows:
                                s = (kk + 1) % FH
                                for m in range(kTM):
                                    v = acc[s][m] + (bias[ch] if bias else 0.0)
                                    acc[s][m] = 0.0
                                    if ow0 + m < g['out_w']:
                                        key = (n, o0 + qd, ow0 + m, ch)
                                        out[key] = v
                                        writes[key] = writes.get(key, 0) + 1
                        kb += FH
    return out, writes

def reference(g, x, wt, bias):
    ref = {}
    for n in range(g['n']):
        for o in range(g['out_h']):
            for ow in range(g['out_w']):
                for ch in range(g['c']):
                    s = bias[ch] if bias else 0.0
                    for i in range(g['fh']):
                        ih = o - g['pad_t'] + i
                        if not 0 <= ih < g['in_h']: continue
                        for j in range(g['fw']):
                            iw = ow - g['pad_l'] + j
                            if not 0 <= iw < g['in_w']: continue
                            wi = g['fh'] - 1 - i if g['flip'] else i
                            wj = g['fw'] - 1 - j if g['flip'] else j
                            s += x[n][ih][iw][ch] * wt[wi][wj][ch]
                    ref[(n, o, ow, ch)] = s
    return ref

def check(case, bdc):
    n, h, w, c, fh, fw, pt, pb, pl, pr = case
    assert c % kCpt == 0 and 1 <= fh <= kMaxF and 1 <= fw <= kMaxF, case  # what vslide_f32_supports accepts
    g = geometry(n, h, w, c, fh, fw, pt, pb, pl, pr, bdc)
    rnd = random.Random(hash(case) & 0xffff)
    x = [[[[rnd.uniform(-1, 1) for _ in range(c)] for _ in range(g['in_w'])] for _ in range(g['in_h'])] for _ in range(n)]
    wt = [[[rnd.uniform(-1, 1) for _ in range(c)] for _ in range(fw)] for _ in range(fh)]
    bias = None if bdc else [rnd.uniform(-1, 1) for _ in range(c)]
    out, writes = run_kernel(g, x, wt, bias)
    ref = reference(g, x, wt, bias)
    assert set(out) == set(ref), (case, bdc, 'coverage', len(out), len(ref))
    assert all(v == 1 for v in writes.values()), (case, bdc, 'double write')
    err = max(abs(out[k] - ref[k]) for k in ref) if ref else 0
    assert err < 1e-9, (case, bdc, err)
    return len(ref)

cases = [  # n, h, w, c, fh, fw, pt, pb, pl, pr (small C versions of the GPU test shapes)
    (1, 17, 34, 8, 3, 3, 1, 1, 1, 1), (1, 40, 37, 136, 3, 3, 1, 1, 1, 1), (2, 33, 5, 8, 3, 3, 1, 1, 1, 1),
    (1, 1, 1, 8, 3, 3, 1, 1, 1, 1), (1, 1, 9, 16, 1, 3, 0, 0, 1, 1), (1, 9, 1, 16, 3, 1, 1, 1, 0, 0),
    (1, 18, 19, 24, 3, 2, 0, 2, 1, 0), (2, 16, 16, 8, 2, 3, 1, 0, 2, 0), (1, 35, 17, 40, 3, 3, 0, 0, 0, 0),
    (1, 6, 7, 8, 3, 3, 3, 3, 3, 3), (1, 16, 20, 8, 1, 1, 0, 0, 0, 0), (1, 31, 31, 8, 2, 2, 0, 1, 0, 1),
    (1, 17, 130, 4, 3, 3, 1, 1, 1, 1), (1, 19, 9, 132, 2, 1, 1, 0, 0, 0),
]
total = 0
for cs in cases:
    for bdc in (False, True):
        total += check(cs, bdc)
print('ok', len(cases) * 2, 'geometries,', total, 'outputs')
