#!/usr/bin/python3
"""Fits the polynomial g in M(a) = t*g(t), t = 1/(1 + P*a), where M(a) = Q(a)*exp(a^2/2) and Q(a) = erfc(a/sqrt2)/2
is the upper normal tail: the float GELU in kernels/pointwise/gelu_cpu_f32.cpp computes Q(|x|) = exp(-x^2/2)*M(|x|).
Weighted least squares (Lawson iteration towards minimax) in relative error over a in [0, MAX_A]; prints the
coefficients (highest degree first, for Horner) and the achieved maximum relative error in double."""
import math
import sys

import numpy as np

P = float(sys.argv[1]) if len(sys.argv) > 1 else 0.3125  # exact in float: t = 1/(1 + P*a) is computed in float
DEG = int(sys.argv[2]) if len(sys.argv) > 2 else 9
MAX_A = 15.0


def mills(a):
    # erfc is accurate in relative terms down to its underflow (~1e-308), far beyond a = 15 (erfc ~ 1e-51).
    return 0.5 * math.erfc(a / math.sqrt(2.0)) * math.exp(0.5 * a * a)


t_lo, t_hi = 1.0 / (1.0 + P * MAX_A), 1.0
# Chebyshev-distributed sample points in t, dense enough that the fit is not only right at the nodes.
n_pts = 4000
u = np.cos(np.pi * (np.arange(n_pts) + 0.5) / n_pts)
t = 0.5 * (t_lo + t_hi) + 0.5 * (t_hi - t_lo) * u
a = (1.0 / t - 1.0) / P
target = np.array([mills(v) for v in a]) / t  # g(t) = M(a)/t
V = np.vander(t, DEG + 1)  # highest degree first
w = np.ones_like(t)
for _ in range(60):
    W = w / np.abs(target)  # relative error
    coef, *_ = np.linalg.lstsq(V * W[:, None], target * W, rcond=None)
    err = np.abs(V @ coef - target) / np.abs(target)
    w = w * err / err.max() + 1e-12
    w = w / w.sum()
print(f"P={P!r} DEG={DEG} max_rel_err={err.max():.3e}")
for c in coef:
    print(f"{float(np.float32(c))!r}f,")
# Error with the coefficients rounded to float (what the kernel uses), evaluated in double on a dense grid.
c32 = np.array([np.float32(c) for c in coef], dtype=np.float64)
aa = np.linspace(0.0, MAX_A, 200001)
tt = 1.0 / (1.0 + P * aa)
ref = np.array([mills(v) for v in aa])
print(f"float-coefficient max_rel_err={np.max(np.abs(tt * np.polyval(c32, tt) - ref) / ref):.3e}")
