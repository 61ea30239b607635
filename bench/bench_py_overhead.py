#!/usr/bin/env python3
"""bench_py_overhead — the Python binding's per-call overhead against C.

    python3 bench/bench_py_overhead.py [--N 32] [--calls 200] [--rounds 7]
                                       [--threads 1] [--json FILE] [--profile]
                                       [--value-check compare|version]

2-D Poisson on an N x N grid (n = N^2, default 1024), b = ones, the solver
cached (set up before timing). Per call:

  C        sla_solver_solve + sla_solver_solve_vjp   (build/bin/sla_bench_call_overhead)
  Python   x = A.solve(b, method=...); x.sum().backward()   (values require grad)
  Python   x = A.solve(b, method=...)                         (forward only)

for a direct method (cholesky) and a Krylov one (cg + ic0, rtol 1e-8).
Rounds are interleaved (C round, Python round, ...); each round's median
over `calls` calls, then the median over rounds. The overhead is Python's
median minus C's; the goal (issue 19) is <= 50 us for solve + backward.
A table goes to stdout and one JSON object to FILE (default
bench/out/py_overhead.json). The "(CPU time)" rows compare this thread's
CPU time per call (mean over each round's timed calls, median over rounds;
C: CLOCK_THREAD_CPUTIME_ID): on a loaded machine they move less than the
wall-clock medians. --profile: cProfile of the Python loop
(cholesky), the top entries by own time.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "python"))

import torch  # noqa: E402

import sla  # noqa: E402

METHODS = [("cholesky", {"method": "cholesky"}, "method=cholesky"),
           ("cg+ic0", {"method": "cg", "preconditioner": "ic0", "rtol": 1e-8},
            "method=cg,precond=ic0,rtol=1e-8")]


def c_round(exe, N, opts, calls, threads):
    out = subprocess.run([exe, "--N", str(N), "--opts", opts, "--calls", str(calls),
                          "--threads", str(threads)], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def py_round(step, calls, warmup=10):
    """(median wall us per call, this thread's CPU us per call)."""
    for _ in range(warmup):
        step()
    t = []
    c0 = time.thread_time()
    for _ in range(calls):
        t0 = time.perf_counter()
        step()
        t.append(time.perf_counter() - t0)
    cpu = time.thread_time() - c0
    return 1e6 * statistics.median(t), 1e6 * cpu / calls


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--N", type=int, default=32)
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--json", default=os.path.join(HERE, "out", "py_overhead.json"))
    ap.add_argument("--exe", default=os.path.join(ROOT, "build", "bin", "sla_bench_call_overhead"))
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--value-check", default="compare", choices=["compare", "version"],
                    help="sla.set_value_check mode (compare: O(nnz) check per call)")
    a = ap.parse_args()
    sla.set_num_threads(a.threads)
    sla.set_value_check(a.value_check)
    P = sla.poisson(2, a.N)
    v = P.values.detach().clone().requires_grad_(True)
    A = sla.SparseTensor(v, P.row, P.col, P.shape)
    b = torch.ones(P.shape[0], dtype=torch.float64)
    rows = []
    for name, kw, copts in METHODS:
        def step(kw=kw):
            x = A.solve(b, **kw)
            x.sum().backward()

        def fwd(kw=kw):
            A.solve(b, **kw)

        step()  # set-up (factorization / preconditioner) out of the timing
        c, py, pyf = [], [], []
        for _ in range(a.rounds):
            c.append(c_round(a.exe, a.N, copts, a.calls, a.threads))
            py.append(py_round(step, a.calls))
            pyf.append(py_round(fwd, a.calls))
        c_step = statistics.median(r["step_us"] for r in c)
        c_fwd = statistics.median(r["solve_us"] for r in c)
        c_cpu = statistics.median(r["step_cpu_us"] for r in c)
        p_step, p_fwd = statistics.median(t for t, _ in py), statistics.median(t for t, _ in pyf)
        p_cpu = statistics.median(u for _, u in py)
        rows.append({"method": name, "n": P.shape[0], "nnz": P.nnz, "threads": a.threads,
                     "value_check": a.value_check,
                     "calls": a.calls, "rounds": a.rounds,
                     "c_step_us": c_step, "py_step_us": p_step, "overhead_step_us": p_step - c_step,
                     "ratio_step": p_step / c_step,
                     "c_step_cpu_us": c_cpu, "py_step_cpu_us": p_cpu,
                     "overhead_step_cpu_us": p_cpu - c_cpu, "ratio_step_cpu": p_cpu / c_cpu,
                     "c_solve_us": c_fwd, "py_solve_us": p_fwd, "overhead_solve_us": p_fwd - c_fwd,
                     "ratio_solve": p_fwd / c_fwd})
    print("n = %d (2-D Poisson %dx%d), threads %d, value check %s, median of %d rounds x %d "
          "calls" % (P.shape[0], a.N, a.N, a.threads, a.value_check, a.rounds, a.calls))
    print("%-9s %-14s %10s %10s %12s %7s" % ("method", "per call", "C us", "Python us",
                                             "overhead us", "ratio"))
    for r in rows:
        print("%-9s %-14s %10.1f %10.1f %12.1f %7.2f" % (
            r["method"], "solve+backward", r["c_step_us"], r["py_step_us"],
            r["overhead_step_us"], r["ratio_step"]))
        print("%-9s %-14s %10.1f %10.1f %12.1f %7.2f" % (
            r["method"], "  (CPU time)", r["c_step_cpu_us"], r["py_step_cpu_us"],
            r["overhead_step_cpu_us"], r["ratio_step_cpu"]))
        print("%-9s %-14s %10.1f %10.1f %12.1f %7.2f" % (
            r["method"], "solve", r["c_solve_us"], r["py_solve_us"], r["overhead_solve_us"],
            r["ratio_solve"]))
    os.makedirs(os.path.dirname(os.path.abspath(a.json)), exist_ok=True)
    with open(a.json, "w") as f:
        json.dump({"bench": "py_overhead", "goal_overhead_us": 50.0, "rows": rows}, f, indent=1)
    print("json: %s" % a.json)
    if a.profile:
        import cProfile
        import pstats
        kw = METHODS[0][1]
        pr = cProfile.Profile()
        pr.enable()
        for _ in range(a.calls):
            x = A.solve(b, **kw)
            x.sum().backward()
        pr.disable()
        pstats.Stats(pr).sort_stats("tottime").print_stats(20)


if __name__ == "__main__":
    main()
