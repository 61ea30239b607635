#!/usr/bin/python3
"""SciPy's direct solver on the problems of bench_direct (which runs this).

    /usr/bin/python3 bench/scipy_direct.py poisson --sizes 316,1000
    /usr/bin/python3 bench/scipy_direct.py batch --file SYSTEMS.bin

poisson: 2D Poisson on an N x N grid (5-point Laplacian, 4 on the diagonal,
-1 off it, x fastest; the matrix of sla_gen_poisson(2, N)), b = ones. The
matrix is built as CSR with diags/kron (build_s), converted to CSC
(convert_s, timed separately), then solved with
scipy.sparse.linalg.spsolve(A_csc, b) with default options (SuperLU with
COLAMD; scikit-umfpack is not installed). Median of --reps runs (default
3 below 3e5 unknowns, 1 above). Prints one JSON line per size.

batch: reads the systems bench_direct wrote (int64 n, nnz, count, N; int64
rowptr[n+1], colind[nnz]; float64 vals[count][nnz], then sla's x[count][n]
and dL/dA[count][nnz] for L = sum(x)), and runs the loop a SciPy user
would write for solve + VJP, one system at a time:
    x   = spsolve(A, b)            (b = ones)
    lam = spsolve(A.T, gx)         (gx = ones; the adjoint solve)
    gA  = -lam[rows] * x[cols]     (the gradient on the pattern, numpy)
The CSC matrices are built before the loop (convert_s, reported apart).
Also a loop that factors once with splu and solves both systems with that
factor (trans='T' for the adjoint), and the largest relative difference
between SciPy's and sla's x and gradient. Prints one JSON line.
"""
import argparse
import json
import os
import resource
import statistics
import sys
import time
import warnings

import numpy as np
import scipy
import scipy.sparse as sp
import scipy.sparse.linalg as spla


def load_mark():
    busy = 0.0
    try:
        with open("/proc/stat") as f:
            v = [int(t) for t in f.readline().split()[1:9]]
        busy = (v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        pass
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return time.perf_counter(), busy, ru.ru_utime + ru.ru_stime


def other_load_pct(a, b):
    wall = b[0] - a[0]
    if wall <= 0 or b[1] <= 0:
        return -1.0
    return max(0.0, 100.0 * ((b[1] - a[1]) - (b[2] - a[2])) / (wall * os.cpu_count()))


def poisson2d(N):
    T = sp.diags([-np.ones(N - 1), 4.0 * np.ones(N), -np.ones(N - 1)], [-1, 0, 1])
    S = sp.diags([-np.ones(N - 1), -np.ones(N - 1)], [-1, 1])
    I = sp.identity(N)
    A = (sp.kron(I, T) + sp.kron(S, I)).tocsr()
    A.sort_indices()
    return A


def versions():
    return {"scipy": scipy.__version__, "numpy": np.__version__}


def run_poisson(args):
    sizes = [int(s) for s in args.sizes.split(",")]
    for N in sizes:
        n = N * N
        reps = args.reps if args.reps else (3 if n < 300000 else 1)
        t0 = time.perf_counter()
        Acsr = poisson2d(N)
        build_s = time.perf_counter() - t0
        b = np.ones(n)
        conv, times = [], []
        mark0 = load_mark()
        x = None
        for _ in range(reps):
            t0 = time.perf_counter()
            A = Acsr.tocsc()
            t1 = time.perf_counter()
            x = spla.spsolve(A, b)
            t2 = time.perf_counter()
            conv.append(t1 - t0)
            times.append(t2 - t1)
        mark1 = load_mark()
        res = float(np.linalg.norm(b - Acsr @ x) / np.linalg.norm(b))
        out = {"N": N, "n": n, "nnz": int(Acsr.nnz), "reps": reps, "build_s": build_s,
               "convert_s": statistics.median(conv), "spsolve_s": statistics.median(times),
               "spsolve_min_s": min(times), "residual": res,
               "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
               "other_load_pct": other_load_pct(mark0, mark1)}
        out.update(versions())
        print(json.dumps(out), flush=True)


def run_batch(args):
    with open(args.file, "rb") as f:
        n, nnz, count, N = (int(v) for v in np.fromfile(f, dtype=np.int64, count=4))
        rowptr = np.fromfile(f, dtype=np.int64, count=n + 1)
        colind = np.fromfile(f, dtype=np.int64, count=nnz)
        vals = np.fromfile(f, dtype=np.float64, count=count * nnz).reshape(count, nnz)
        x_sla = np.fromfile(f, dtype=np.float64, count=count * n).reshape(count, n)
        gA_sla = np.fromfile(f, dtype=np.float64, count=count * nnz).reshape(count, nnz)
    rows = np.repeat(np.arange(n), np.diff(rowptr))
    b = np.ones(n)
    gx = np.ones(n)

    # sla's CSR arrays -> SciPy CSR -> CSC (timed apart from the loops)
    t0 = time.perf_counter()
    mats = [sp.csr_matrix((vals[i], colind, rowptr), shape=(n, n)).tocsc() for i in range(count)]
    convert_s = time.perf_counter() - t0

    X = np.empty((count, n))
    GA = np.empty((count, nnz))
    mark0 = load_mark()
    t_solve = t_adj = t_grad = 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t_loop0 = time.perf_counter()
        for i in range(count):
            A = mats[i]
            t0 = time.perf_counter()
            x = spla.spsolve(A, b)
            t1 = time.perf_counter()
            lam = spla.spsolve(A.T, gx)
            t2 = time.perf_counter()
            GA[i] = -lam[rows] * x[colind]
            t3 = time.perf_counter()
            X[i] = x
            t_solve += t1 - t0
            t_adj += t2 - t1
            t_grad += t3 - t2
        loop_s = time.perf_counter() - t_loop0

        # the same with one splu factor per system
        t_f = t_s = t_a = 0.0
        t_loop0 = time.perf_counter()
        for i in range(count):
            A = mats[i]
            t0 = time.perf_counter()
            lu = spla.splu(A)
            t1 = time.perf_counter()
            x = lu.solve(b)
            t2 = time.perf_counter()
            lam = lu.solve(gx, trans="T")
            t3 = time.perf_counter()
            g = -lam[rows] * x[colind]
            t_f += t1 - t0
            t_s += t2 - t1
            t_a += t3 - t2
        splu_loop_s = time.perf_counter() - t_loop0
    mark1 = load_mark()
    err_x = float(np.max(np.abs(X - x_sla)) / np.max(np.abs(X)))
    err_g = float(np.max(np.abs(GA - gA_sla)) / np.max(np.abs(GA)))
    out = {"count": count, "N": N, "n": n, "nnz": nnz, "convert_s": convert_s, "loop_s": loop_s,
           "solve_s": t_solve, "adjoint_s": t_adj, "grad_s": t_grad,
           "splu_loop_s": splu_loop_s, "splu_factor_s": t_f, "splu_solve_s": t_s,
           "splu_adjoint_s": t_a, "max_rel_err_x": err_x, "max_rel_err_gA": err_g,
           "other_load_pct": other_load_pct(mark0, mark1)}
    out.update(versions())
    print(json.dumps(out), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="mode", required=True)
    p = sub.add_parser("poisson")
    p.add_argument("--sizes", default="316,1000")
    p.add_argument("--reps", type=int, default=0)
    q = sub.add_parser("batch")
    q.add_argument("--file", required=True)
    args = ap.parse_args()
    if args.mode == "poisson":
        run_poisson(args)
    else:
        run_batch(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
