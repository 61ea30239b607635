#!/usr/bin/python3
"""SpGEMM C = A A on the 2-D Poisson matrix (sla gen, N x N grid; N = 1000:
n = 1e6): sla through Python (the first product: pattern and values, and
the numeric phase alone on the cached pattern, the training-loop case)
against SciPy's A @ A, measured interleaved in one process (round r runs
SciPy, then sla's first product, then sla's cached product), so that
other load on a shared machine hits all three alike. Each round also
times the first product's parts: the operand (_algebra._operand: its C
matrix, borrowing the values, which C checks finite, and the check of A's
indices against it, O(nnz), both over sla's threads), and the C kernel
sla_spgemm alone; "rest" is the first product minus those two (the
result's Python objects; its int64 indices are made only when read).
Prints the medians (and minima) of wall and CPU time, the ratios SciPy /
sla of the medians (above 1: sla is faster), the other processes' share of
the CPUs, and one JSON line. The C kernels' floor:
build-bench/bin/sla_bench_spgemm (its --scipy S prints the ratio to a
SciPy time).

    /usr/bin/python3 bench/bench_spgemm.py [N] [repeats] [threads]

threads: given to sla.set_num_threads; without it sla follows torch
(torch.get_num_threads(), or the usable CPUs where torch's own default is a
miscounted 1: see docs/python.md), which the first line reports.
"""
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import numpy as np  # noqa: E402
import torch  # noqa: E402

import sla  # noqa: E402
from sla import _algebra  # noqa: E402


def busy_seconds():
    """CPU seconds the whole machine spent busy (/proc/stat), or None."""
    try:
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:9]]
        return (v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError):
        return None


def timed(f):
    w0, c0 = time.perf_counter(), time.process_time()
    r = f()
    return r, time.perf_counter() - w0, time.process_time() - c0


def main():
    N = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    reps = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    if len(sys.argv) > 3:
        sla.set_num_threads(int(sys.argv[3]))
    A = sla.poisson(2, N)
    S = A.to_scipy().tocsr()
    pat = A.pattern
    va = A._csr_values(pat).contiguous()
    import ctypes
    from sla import _lib as L
    cm = _algebra._CMat(pat, va)

    def c_kernel():
        out = ctypes.c_void_p()
        L.check(_algebra._spgemm(L.ctx(), cm.ptr, cm.ptr, ctypes.byref(out)), "sla_spgemm")
        L.sla_matrix_destroy(ctypes.byref(out))

    def sla_full():
        _algebra._cache.clear()
        return A @ A

    def sla_numeric():
        res = _algebra._symbolic("matmul", pat, pat)
        return _algebra.BinaryFn.apply(va, va, "matmul", pat, pat, res, 1.0, 1.0)

    names = ("scipy", "full", "numeric", "operand", "kernel")
    fns = (lambda: S @ S, sla_full, sla_numeric, lambda: _algebra._operand(A), c_kernel)
    wall = {k: [] for k in names}
    cpu = {k: [] for k in names}
    for f in fns:  # warm-up: libraries loaded, pools and caches filled
        f()
    b0, t0, s0 = busy_seconds(), time.perf_counter(), time.process_time()
    for _ in range(reps):
        for k, f in zip(names, fns):
            r, w, c = timed(f)
            del r
            wall[k].append(w)
            cpu[k].append(c)
    b1, t1, s1 = busy_seconds(), time.perf_counter(), time.process_time()
    other = None
    if b0 is not None and b1 is not None:
        other = max(0.0, 100.0 * ((b1 - b0) - (s1 - s0)) / ((t1 - t0) * os.cpu_count()))

    C = A @ A
    ref = (S @ S).tocsr()
    ref.sort_indices()
    got = C.to_scipy().tocsr()
    same_pattern = (np.array_equal(got.indptr, ref.indptr)
                    and np.array_equal(got.indices, ref.indices))
    rel = float(np.abs(got.data - ref.data).max() / max(np.abs(ref.data).max(), 1e-300)) \
        if same_pattern and ref.nnz else float("nan")
    med = {k: statistics.median(wall[k]) for k in names}
    cmed = {k: statistics.median(cpu[k]) for k in names}
    threads = sla.get_num_threads()
    print("2-D Poisson N=%d: n=%d nnz(A)=%d nnz(A A)=%d, sla threads=%s (torch: %d), %d interleaved "
          "rounds; pattern identical to SciPy's: %s, max rel diff %.1e; other load %s"
          % (N, A.shape[0], A.nnz, C.nnz, threads, torch.get_num_threads(), reps, same_pattern,
             rel, "%.0f %%" % other if other is not None else "unknown"))
    print("| | wall median (min) s | CPU median s | SciPy / sla (wall medians) |")
    print("|---|---|---|---|")
    labels = {"scipy": "SciPy A @ A", "full": "sla A @ A, first product (pattern + values)",
              "numeric": "sla numeric on the cached pattern",
              "operand": "  of the first: operand (C matrix, values and indices checked)",
              "kernel": "  of the first: C kernel sla_spgemm", "rest": "  of the first: rest"}
    med["rest"] = med["full"] - med["operand"] - med["kernel"]
    cmed["rest"] = cmed["full"] - cmed["operand"] - cmed["kernel"]
    wall["rest"] = [med["rest"]]
    for k in ("scipy", "full", "numeric", "operand", "kernel", "rest"):
        ratio = "%.2f" % (med["scipy"] / med[k]) if k in ("full", "numeric", "kernel") else ""
        print("| %s | %.4f (%.4f) | %.4f | %s |" % (labels[k], med[k], min(wall[k]), cmed[k],
                                                    ratio))
    print(json.dumps({"bench": "spgemm_py", "N": N, "n": A.shape[0], "nnzC": C.nnz,
                      "threads": threads, "reps": reps, "same_pattern": same_pattern,
                      "max_rel_diff": rel, "other_load_pct": other,
                      "wall_median_s": med, "cpu_median_s": cmed,
                      "ratio_full": med["scipy"] / med["full"],
                      "ratio_numeric": med["scipy"] / med["numeric"],
                      "ratio_kernel": med["scipy"] / med["kernel"]}))


if __name__ == "__main__":
    main()
