#!/usr/bin/python3
"""Naive differentiable CG in PyTorch: k unrolled iterations under autograd.

    /usr/bin/python3 bench/torch_unrolled_cg.py K N [THREADS]

2D Poisson on an N x N grid (n = N^2) in COO form whose values require
grad (the product is y = index_add(rows, values * p[cols]): torch 1.13's
sparse.mm backward to sparse values forms a dense n x n gradient), b = ones (requires grad), x0 = 0, exactly K plain CG
iterations written with torch operations, then L = sum(x) and
L.backward(): autograd keeps every iteration's vectors for the backward
pass, so memory grows linearly with K. This is what sla's adjoint solve
(one extra solve, O(n + nnz) memory) replaces; bench/run_all.sh runs it
next to sla_bench_adjoint_mem with the same n and K.

Prints one JSON line: k, n, peak RSS (MiB; ru_maxrss of this process),
the RSS before the solve, the forward and backward seconds, and the
relative residual reached. One process per K, so peaks do not mix.
"""
import json
import resource
import sys
import time

import torch


def rss_mib():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() / 2**20


def poisson2d(N):
    n = N * N
    idx = torch.arange(n)
    i, j = idx // N, idx % N
    rows, cols, vals = [idx], [idx], [torch.full((n,), 4.0, dtype=torch.float64)]
    for di, dj in ((-1, 0), (1, 0), (0, -1), (0, 1)):
        ok = (i + di >= 0) & (i + di < N) & (j + dj >= 0) & (j + dj < N)
        rows.append(idx[ok])
        cols.append(((i + di) * N + (j + dj))[ok])
        vals.append(torch.full((int(ok.sum()),), -1.0, dtype=torch.float64))
    return n, torch.stack([torch.cat(rows), torch.cat(cols)]), torch.cat(vals)


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    k, N = int(sys.argv[1]), int(sys.argv[2])
    torch.set_num_threads(int(sys.argv[3]) if len(sys.argv) > 3 else 1)
    n, index, values = poisson2d(N)
    values.requires_grad_(True)
    b = torch.ones(n, dtype=torch.float64, requires_grad=True)
    rss0 = rss_mib()
    t0 = time.perf_counter()
    rows, cols = index[0], index[1]

    def matvec(v):
        return torch.zeros(n, dtype=torch.float64).index_add(0, rows, values * v[cols])

    x = torch.zeros(n, dtype=torch.float64)
    r = b.clone()
    p = r
    rs = torch.dot(r, r)
    for _ in range(k):
        Ap = matvec(p)
        alpha = rs / torch.dot(p, Ap)
        x = x + alpha * p
        r = r - alpha * Ap
        rs_new = torch.dot(r, r)
        p = r + (rs_new / rs) * p
        rs = rs_new
    loss = x.sum()
    t1 = time.perf_counter()
    loss.backward()
    t2 = time.perf_counter()
    with torch.no_grad():
        res = float(torch.linalg.norm(b - matvec(x)) / torch.linalg.norm(b))
    ok = values.grad is not None and b.grad is not None and bool(torch.isfinite(b.grad).all())
    print(json.dumps({"k": k, "N": N, "n": n, "nnz": int(values.numel()),
                      "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
                      "rss_before_mib": rss0, "forward_s": t1 - t0, "backward_s": t2 - t1,
                      "residual": res, "gradients_finite": ok, "torch": torch.__version__}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
