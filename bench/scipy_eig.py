#!/usr/bin/python3
"""SciPy's eigsh on the problem of bench_eig (which runs this).

    /usr/bin/python3 bench/scipy_eig.py --N 350 --k 6 --reps 3

2D Poisson on an N x N grid (5-point Laplacian, 4 on the diagonal, -1 off
it, x fastest; the matrix of sla_gen_poisson(2, N)), built as CSC with
diags/kron (not timed). Times scipy.sparse.linalg.eigsh(A, k, sigma=0,
which='LM') -- shift-invert around 0 with SuperLU (splu), SciPy's
documented way to get the smallest eigenvalues -- median of --reps runs,
and reports the eigenvalues (ascending), the residuals ||A v - l v||, and
the largest error against the analytic eigenvalues. Prints one JSON line.
"""
import argparse
import json
import statistics
import time

import numpy as np
import scipy
import scipy.sparse as sp
import scipy.sparse.linalg as spla


def poisson2d(N):
    T = sp.diags([-np.ones(N - 1), 2 * np.ones(N), -np.ones(N - 1)], [-1, 0, 1])
    I = sp.identity(N)
    return (sp.kron(I, T) + sp.kron(T, I)).tocsc()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--N", type=int, default=350)
    ap.add_argument("--k", type=int, default=6)
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args()
    A = poisson2d(a.N)
    times = []
    for _ in range(a.reps):
        t0 = time.perf_counter()
        w, V = spla.eigsh(A, k=a.k, sigma=0, which="LM")
        times.append(time.perf_counter() - t0)
    order = np.argsort(w)
    w, V = w[order], V[:, order]
    res = [float(np.linalg.norm(A @ V[:, i] - w[i] * V[:, i])) for i in range(a.k)]
    h = np.pi / (a.N + 1)
    c = 2 - 2 * np.cos(np.arange(1, a.N + 1) * h)
    ref = np.sort(np.add.outer(c, c).ravel())[: a.k]
    print(json.dumps({
        "N": a.N, "n": a.N * a.N, "k": a.k, "reps": a.reps,
        "median_s": statistics.median(times), "times_s": times,
        "eigenvalues": [float(x) for x in w], "residuals": res,
        "max_abs_err": float(np.max(np.abs(w - ref))),
        "scipy": scipy.__version__, "numpy": np.__version__,
    }))


if __name__ == "__main__":
    main()
