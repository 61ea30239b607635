#!/usr/bin/python3
"""SparseTensorList algebra: L1 + L2, L1 * L2 and norm over m small matrices
with different patterns (random graphs of n nodes), by the list's
block-diagonal path (one sla_spadd / sla_spmul call, cached patterns)
against a Python loop over the items (SparseTensor + per item, each with its
own cached pattern). Forward and forward + backward. Prints a table and a
JSON line; ratio = loop time / block-diagonal time (above 1: the list path
is faster).

    /usr/bin/python3 bench/bench_list_algebra.py [m] [n] [repeats]
"""
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402
import torch  # noqa: E402

import sla  # noqa: E402


def best(f, reps):
    t = []
    for _ in range(reps):
        t0 = time.perf_counter()
        f()
        t.append(time.perf_counter() - t0)
    return min(t)


def make(m, n, seed):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(m):
        M = sp.random(n, n, density=min(1.0, 8.0 / n), random_state=rng).tocoo()
        out.append(sla.SparseTensor(torch.tensor(M.data, requires_grad=True),
                                    torch.from_numpy(M.row.astype(np.int64)),
                                    torch.from_numpy(M.col.astype(np.int64)), (n, n)))
    return sla.SparseTensorList(out)


def main():
    m = int(sys.argv[1]) if len(sys.argv) > 1 else 256
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 64
    reps = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    L1, L2 = make(m, n, 1), make(m, n, 2)
    cases = {
        "add": (lambda: (L1 + L2).norm(), lambda: torch.stack([(a + b).norm() for a, b in zip(L1, L2)])),
        "mul": (lambda: (L1 * L2).sum(), lambda: torch.stack([(a * b).sum() for a, b in zip(L1, L2)])),
        "norm": (lambda: L1.norm(), lambda: torch.stack([a.norm() for a in L1])),
    }
    rows = []
    print("%-6s %-8s %12s %12s %8s" % ("op", "pass", "list (ms)", "loop (ms)", "ratio"))
    for name, (fl, fp) in cases.items():
        for mode in ("fwd", "fwd+bwd"):
            def run(f):
                if mode == "fwd":
                    with torch.no_grad():
                        return f()
                return f().sum().backward()
            run(fl), run(fp)  # warm the caches (patterns, symbolic phases)
            tl, tp = best(lambda: run(fl), reps), best(lambda: run(fp), reps)
            rows.append({"op": name, "pass": mode, "m": m, "n": n, "list_s": tl, "loop_s": tp,
                         "ratio": tp / tl})
            print("%-6s %-8s %12.3f %12.3f %8.2f" % (name, mode, 1e3 * tl, 1e3 * tp, tp / tl))
    print(json.dumps({"bench": "list_algebra", "rows": rows}))


if __name__ == "__main__":
    main()
