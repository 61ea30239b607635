#!/usr/bin/python3
"""SciPy's lsqr and lsmr on the matrix bench_lsq wrote (bench_lsq runs this).

    /usr/bin/python3 bench/scipy_lsq.py serve --file bench/out/lsq_A.bin
    /usr/bin/python3 bench/scipy_lsq.py once --file F [--method lsqr] [--iters 100]

The file holds A (m x n CSR) and b (m); its format is described in
bench/bench_tomo.h. A becomes a scipy.sparse.csr_matrix with int32
indices (what SciPy chooses itself for nnz < 2^31).

serve: loads the file, prints one JSON line {"ready": true, ...}, then reads
commands from stdin, one a line, and answers each with one JSON line:
    METHOD ITERS ATOL BTOL [XFILE]
        METHOD lsqr or lsmr: x = scipy.sparse.linalg.METHOD(A, b, damp=0,
        atol=ATOL, btol=BTOL, conlim=0, maxiter/iter_lim=ITERS), timed
        (seconds); then, untimed, the true ||b - A x||, ||A^T (b - A x)||
        and ||x||; XFILE receives x (float64, n values) when given.
    quit
The share of the machine other processes used during the solve is
measured as in bench/bench_util.h (other_load_pct). bench_lsq alternates
these runs with its own, so that both see the same machine.
once: one such run, printed as JSON (for checking by hand).
"""
import argparse
import json
import os
import resource
import sys
import time

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


def read_problem(path):
    """(A as CSR with int32 indices when they fit, the vector, load seconds)."""
    t0 = time.perf_counter()
    with open(path, "rb") as f:
        m, n, nnz, vlen = (int(v) for v in np.fromfile(f, dtype=np.int64, count=4))
        rowptr = np.fromfile(f, dtype=np.int64, count=m + 1)
        colind = np.fromfile(f, dtype=np.int32, count=nnz)
        vals = np.fromfile(f, dtype=np.float64, count=nnz)
        vec = np.fromfile(f, dtype=np.float64, count=vlen)
    if len(vec) != vlen:
        sys.exit(f"scipy_lsq.py: {path} is truncated")
    if nnz < 2**31 - 1:
        rowptr = rowptr.astype(np.int32)
    A = sp.csr_matrix((vals, colind, rowptr), shape=(m, n))
    return A, vec, time.perf_counter() - t0


def versions():
    return {"scipy": scipy.__version__, "numpy": np.__version__}


def run(A, b, method, iters, atol, btol, xfile=None):
    mark0 = load_mark()
    t0 = time.perf_counter()
    if method == "lsqr":
        res = spla.lsqr(A, b, damp=0.0, atol=atol, btol=btol, conlim=0.0, iter_lim=iters)
        x, istop, itn, rnorm_est = res[0], res[1], res[2], res[3]
    elif method == "lsmr":
        res = spla.lsmr(A, b, damp=0.0, atol=atol, btol=btol, conlim=0.0, maxiter=iters)
        x, istop, itn, rnorm_est = res[0], res[1], res[2], res[3]
    else:
        return {"error": f"unknown method {method}"}
    seconds = time.perf_counter() - t0
    mark1 = load_mark()
    r = b - A @ x
    out = {"method": method, "iterations": int(itn), "istop": int(istop), "seconds": seconds,
           "rnorm_est": float(rnorm_est), "true_rnorm": float(np.linalg.norm(r)),
           "true_arnorm": float(np.linalg.norm(A.T @ r)), "xnorm": float(np.linalg.norm(x)),
           "other_load_pct": other_load_pct(mark0, mark1)}
    if xfile:
        x.astype(np.float64).tofile(xfile)
    return out


def serve(args):
    A, b, load_s = read_problem(args.file)
    ready = {"ready": True, "m": A.shape[0], "n": A.shape[1], "nnz": int(A.nnz),
             "index_dtype": str(A.indices.dtype), "load_s": load_s}
    ready.update(versions())
    print(json.dumps(ready), flush=True)
    for line in sys.stdin:
        w = line.split()
        if not w:
            continue
        if w[0] == "quit":
            break
        try:
            out = run(A, b, w[0], int(w[1]), float(w[2]), float(w[3]), w[4] if len(w) > 4 else None)
        except (IndexError, ValueError) as e:
            out = {"error": f"bad command {line.strip()!r}: {e}"}
        out["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
        print(json.dumps(out), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="mode", required=True)
    p = sub.add_parser("serve")
    p.add_argument("--file", required=True)
    q = sub.add_parser("once")
    q.add_argument("--file", required=True)
    q.add_argument("--method", default="lsqr", choices=["lsqr", "lsmr"])
    q.add_argument("--iters", type=int, default=100)
    q.add_argument("--atol", type=float, default=0.0)
    q.add_argument("--btol", type=float, default=0.0)
    args = ap.parse_args()
    if args.mode == "serve":
        serve(args)
    else:
        A, b, _ = read_problem(args.file)
        out = run(A, b, args.method, args.iters, args.atol, args.btol)
        out.update(versions())
        print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
