#!/usr/bin/python3
"""SpGEMM C = A A on the 2-D Poisson matrix (sla gen, N x N grid; N = 1000:
n = 1e6): sla (symbolic + numeric, and numeric alone on a cached pattern,
the training-loop case) against SciPy's A @ A. Prints the times and the
ratios (SciPy time / sla time: above 1, sla is faster).

    /usr/bin/python3 bench/bench_spgemm.py [N] [repeats]
"""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import numpy as np  # noqa: E402
import torch  # noqa: E402

import sla  # noqa: E402
from sla import _algebra  # noqa: E402


def best(f, reps):
    t = []
    for _ in range(reps):
        t0 = time.perf_counter()
        f()
        t.append(time.perf_counter() - t0)
    return min(t)


def main():
    N = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    reps = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    A = sla.poisson(2, N)
    S = A.to_scipy()
    pat = A.pattern
    va = A._csr_values(pat).contiguous()

    def sla_full():
        _algebra._cache.clear()
        return A @ A

    res = _algebra._symbolic("matmul", pat, pat)

    def sla_numeric():
        return _algebra.BinaryFn.apply(va, va, "matmul", pat, pat, res, 1.0, 1.0)

    t_scipy = best(lambda: S @ S, reps)
    t_full = best(sla_full, reps)
    t_num = best(sla_numeric, reps)
    C = A @ A
    ref = (S @ S).tocsr()
    err = np.abs(C.to_scipy() - ref).max()
    print("2-D Poisson N=%d: n=%d nnz(A)=%d nnz(A A)=%d threads=%d (max |diff| vs SciPy %.1e)"
          % (N, A.shape[0], A.nnz, C.nnz, sla.get_num_threads() or torch.get_num_threads(), err))
    print("scipy A @ A               %8.3f s" % t_scipy)
    print("sla symbolic + numeric    %8.3f s   ratio scipy/sla %.2f" % (t_full, t_scipy / t_full))
    print("sla numeric (cached)      %8.3f s   ratio scipy/sla %.2f" % (t_num, t_scipy / t_num))


if __name__ == "__main__":
    main()
