#!/usr/bin/python3
"""SciPy's spsolve on the 2-D Helmholtz matrix of bench_helmholtz (which runs this).

    /usr/bin/python3 bench/scipy_helmholtz.py --N 316 --k 125.7 --alpha 0.1 --reps 3

The matrix of sla_gen_helmholtz2d(N, k, alpha): the 5-point Laplacian (4 on
the diagonal, -1 off it, x fastest) minus (k h)^2 (1 + i alpha) on the
diagonal, h = 1/(N+1), complex128, built with kron and converted to CSC
before the clock starts; b = ones. Times scipy.sparse.linalg.spsolve(A, b)
with default options (SuperLU, COLAMD; scikit-umfpack is not installed),
median of --reps runs (one above 3e5 unknowns). Prints one JSON line with
seconds, the true relative residual and the share of the CPUs other
processes used meanwhile.
"""
import argparse
import json
import os
import statistics
import time

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla


def busy_seconds():
    try:
        with open("/proc/stat") as f:
            v = [int(t) for t in f.readline().split()[1:9]]
        return (v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return 0.0


def self_seconds():
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--N", type=int, required=True)
    ap.add_argument("--k", type=float, required=True)
    ap.add_argument("--alpha", type=float, default=0.1)
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args()
    N, h = a.N, 1.0 / (a.N + 1)
    T = sp.diags([-np.ones(N - 1), 2 * np.ones(N), -np.ones(N - 1)], [-1, 0, 1])
    I = sp.identity(N)
    L = sp.kron(I, T) + sp.kron(T, I)
    A = (L.astype(np.complex128) - (a.k * h) ** 2 * (1 + 1j * a.alpha) * sp.identity(N * N)).tocsc()
    b = np.ones(N * N, dtype=np.complex128)
    reps = a.reps if N * N <= 300000 else 1
    times = []
    x = None
    w0, b0, s0 = time.monotonic(), busy_seconds(), self_seconds()
    for _ in range(reps):
        t0 = time.perf_counter()
        x = spla.spsolve(A, b)
        times.append(time.perf_counter() - t0)
    w1, b1, s1 = time.monotonic(), busy_seconds(), self_seconds()
    other = max(0.0, 100.0 * ((b1 - b0) - (s1 - s0)) / ((w1 - w0) * os.cpu_count()))
    res = float(np.linalg.norm(b - A @ x) / np.linalg.norm(b))
    print(json.dumps({"n": N * N, "k": a.k, "alpha": a.alpha, "seconds": statistics.median(times),
                      "residual": res, "reps": reps, "other_load_pct": round(other, 1)}))


if __name__ == "__main__":
    main()
