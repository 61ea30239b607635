#!/usr/bin/python3
"""Recover a conductivity field from observations of the solution, with
PyTorch autograd through sla's differentiable sparse solve.

    -div(kappa grad u) = 1 on the unit square, u = 0 on the boundary,
    kappa*(x, y) = 1 + 0.5 sin(2 pi x) sin(2 pi y),

on a 64 x 64 interior grid; kappa lives on the 65 x 65 cells (finite
volumes: sla.diffusion2d, whose values are differentiable in kappa through
the C generator's exact VJP). u* = u(kappa*) is observed at every node
(noise-free). With kappa = 0.01 + softplus(theta), starting at kappa = 1,
Adam minimises

    L = 0.5 ||u(kappa) - u*||^2 / ||u*||^2
        + alpha/2 * sum over neighbouring cells (kappa_c - kappa_c')^2

with a cosine-decayed learning rate and alpha decayed geometrically. Each
step: the matrix values from kappa (C), a numeric refactorization that
reuses the symbolic analysis, the forward solve, and in backward one
adjoint solve with the same factor, the VJP of kappa -> values (C), the
softplus and the penalty (torch).

Run from the repository root:

    PYTHONPATH=python /usr/bin/python3 examples/inverse_coefficient.py [--steps 1200]
"""

import argparse
import math
import os
import sys
import time

# The factorizations here are small (n = 4096): BLAS threads inside CHOLMOD
# only add synchronisation (the C demo asks OpenBLAS for one thread too).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import torch  # noqa: E402

try:
    import sla  # noqa: E402
except ImportError:  # run from a checkout without PYTHONPATH
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
    import sla

KAPPA_FLOOR = 0.01


def kappa_true(N):
    M = N + 1
    h = 1.0 / M
    c = (torch.arange(M, dtype=torch.float64) + 0.5) * h  # cell centres
    y, x = torch.meshgrid(c, c, indexing="ij")  # cell (a, b): a (x) fastest
    return (1 + 0.5 * torch.sin(2 * math.pi * x) * torch.sin(2 * math.pi * y)).reshape(-1)


def smoothness(kappa, M):
    k = kappa.reshape(M, M)
    return 0.5 * ((k[:, 1:] - k[:, :-1]) ** 2).sum() + 0.5 * ((k[1:, :] - k[:-1, :]) ** 2).sum()


def run(steps=1200, N=64, lr=0.1, lr_end=1e-3, alpha=1e-6, alpha_end=1e-9, method="auto",
        every=None, out=sys.stdout):
    """Train; returns a dict with the loss history, the final relative L2
    error of kappa and the wall time."""
    t0 = time.perf_counter()
    M = N + 1
    h = 1.0 / M
    b = torch.full((N * N,), h * h, dtype=torch.float64)
    kt = kappa_true(N)
    ut, info = sla.diffusion2d(N, kt).solve(b, method=method, return_info=True)
    ut2 = (ut ** 2).sum()
    theta = torch.full((M * M,), math.log(math.expm1(1.0 - KAPPA_FLOOR)), dtype=torch.float64,
                       requires_grad=True)
    opt = torch.optim.Adam([theta], lr=lr, betas=(0.9, 0.999), eps=1e-8)
    every = every or max(1, steps // 15)
    if out:
        print("sla %s: recover kappa on a %dx%d grid (n = %d, %d cells); solver %s (%s)%s"
              % (sla.version(), N, N, N * N, M * M, info.method, info.backend,
                 ", " + info.note if info.note else ""), file=out)
        print("  %6s  %12s  %12s  %10s  %9s" % ("step", "loss", "misfit", "rel.err", "lr"),
              file=out)
    losses = []
    for step in range(steps + 1):
        frac = step / steps if steps else 1.0
        a = alpha * (alpha_end / alpha) ** frac if alpha_end > 0 else alpha * (1 - frac)
        rate = lr * (lr_end + (1 - lr_end) * 0.5 * (1 + math.cos(math.pi * frac)))
        for g in opt.param_groups:
            g["lr"] = rate
        last = step == steps
        with torch.set_grad_enabled(not last):
            kappa = KAPPA_FLOOR + torch.nn.functional.softplus(theta)
            u = sla.diffusion2d(N, kappa).solve(b, method=method)
            misfit = 0.5 * ((u - ut) ** 2).sum() / ut2
            loss = misfit + a * smoothness(kappa, M)
        losses.append(loss.item())
        if out and (step % every == 0 or last):
            err = ((kappa - kt).norm() / kt.norm()).item()
            print("  %6d  %12.5e  %12.5e  %9.4f%%  %9.2e" % (step, loss.item(), misfit.item(),
                                                              100 * err, rate), file=out)
            out.flush()
        if last:
            break
        opt.zero_grad()
        loss.backward()
        opt.step()
    seconds = time.perf_counter() - t0
    err = ((kappa - kt).norm() / kt.norm()).item()
    if out:
        print("result: %d steps in %.2f s (%.2f ms per step), loss %.4e -> %.4e, relative L2 "
              "error of kappa %.4f %%" % (steps, seconds, 1e3 * seconds / max(steps, 1),
                                          losses[0], losses[-1], 100 * err), file=out)
    return {"losses": losses, "rel_l2_error": err, "seconds": seconds}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=1200)
    p.add_argument("--n", type=int, default=64, help="interior grid points per side")
    p.add_argument("--lr", type=float, default=0.1)
    p.add_argument("--lr-end", type=float, default=1e-3, help="final lr as a fraction of --lr")
    p.add_argument("--alpha", type=float, default=1e-6)
    p.add_argument("--alpha-end", type=float, default=1e-9)
    p.add_argument("--method", default="auto", help="solver method (auto picks Cholesky here)")
    p.add_argument("--every", type=int, default=0, help="print every K steps")
    p.add_argument("--threads", type=int, default=0, help="threads of the C kernels")
    a = p.parse_args()
    if a.threads:
        sla.set_num_threads(a.threads)
    run(a.steps, a.n, a.lr, a.lr_end, a.alpha, a.alpha_end, a.method, a.every or None)


if __name__ == "__main__":
    main()
