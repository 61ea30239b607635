#!/usr/bin/python3
"""SciPy's svds (ARPACK) on the matrix bench_svds wrote (bench_svds runs this).

    /usr/bin/python3 bench/scipy_svds.py serve --file bench/out/svds_A.bin
    /usr/bin/python3 bench/scipy_svds.py once --file F [--k 10]

The file holds A (m x n CSR) and the start vector v0 (min(m, n) values);
its format is described in bench/bench_tomo.h; A becomes a
scipy.sparse.csr_matrix with int32 indices.

serve: loads the file, prints {"ready": true, ...}, then answers each
command line with one JSON line:
    svds K TOL
        s, U, V = scipy.sparse.linalg.svds(A, k=K, which='LM', tol=TOL,
        v0=v0, solver='arpack'), timed (seconds); then, untimed, the
        singular values in descending order and each triplet's residuals
        ||A v - s u|| and ||A^T u - s v||.
    quit
once: one such run, printed as JSON.
"""
import argparse
import json
import os
import resource
import sys
import time

import numpy as np
import scipy.sparse.linalg as spla

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from scipy_lsq import load_mark, other_load_pct, read_problem, versions  # noqa: E402


def run(A, v0, k, tol):
    mark0 = load_mark()
    t0 = time.perf_counter()
    U, s, Vt = spla.svds(A, k=k, which="LM", tol=tol, v0=v0, solver="arpack")
    seconds = time.perf_counter() - t0
    mark1 = load_mark()
    order = np.argsort(s)[::-1]
    s, U, V = s[order], U[:, order], Vt[order].T
    rv = [float(np.linalg.norm(A @ V[:, i] - s[i] * U[:, i])) for i in range(k)]
    ru = [float(np.linalg.norm(A.T @ U[:, i] - s[i] * V[:, i])) for i in range(k)]
    return {"k": k, "seconds": seconds, "s": [float(x) for x in s], "residual_v": rv, "residual_u": ru,
            "max_residual_v": max(rv), "max_residual_u": max(ru),
            "other_load_pct": other_load_pct(mark0, mark1)}


def serve(args):
    A, v0, load_s = read_problem(args.file)
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
            if w[0] != "svds":
                raise ValueError("expected svds")
            out = run(A, v0, int(w[1]), float(w[2]))
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
    q.add_argument("--k", type=int, default=10)
    q.add_argument("--tol", type=float, default=0.0)
    args = ap.parse_args()
    if args.mode == "serve":
        serve(args)
    else:
        A, v0, _ = read_problem(args.file)
        out = run(A, v0, args.k, args.tol)
        out.update(versions())
        print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
