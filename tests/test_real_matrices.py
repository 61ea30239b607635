#!/usr/bin/python3
"""The default `sla solve` on every square real matrix in tests/data,
against SciPy's spsolve on the same system (computed here, side by side).

x_true[i] = 1 + (i mod 7) / 10, b = A x_true. For a nonsingular matrix the
default solve must reach a forward error ||x - x_true|| / ||x_true|| within
10x SciPy's + 1e-12 and a relative residual ||b - A x|| / ||b|| <= 1e-12;
a singular one must be refused: exit 2 with "singular" in the message.

usage: test_real_matrices.py SLA_BINARY DATA_DIR [--table]
--table prints the results as a Markdown table (bench/RESULTS.md) and JSON.
"""
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import scipy.io
import scipy.sparse as sp
import scipy.sparse.linalg as spla

# name: expected outcome ("ok" or "singular")
MATRICES = {
    "bcsstk01": "ok", "mesh1e1": "ok", "494_bus": "ok", "can_24": "ok",
    "tumorAntiAngiogenesis_2": "ok", "GD97_b": "singular", "cage5": "ok",
    "west0067": "ok", "fs_183_6": "ok", "bayer10": "ok", "west0497": "ok",
    "olm500": "ok", "bp_1200": "ok", "temp": "ok", "rajat19": "ok",
    "reorientation_1": "ok", "nnc1374": "ok", "watt_2": "ok",
    "adder_dcop_05": "ok", "dwt_878": "singular", "rajat01": "singular",
}


def write_vector(path, v):
    with open(path, "w") as f:
        f.write("%%MatrixMarket matrix array real general\n")
        f.write("%d 1\n" % len(v))
        for x in v:
            f.write("%.17g\n" % x)


def read_vector(path):
    with open(path) as f:
        lines = [l for l in f if not l.startswith("%")]
    n = int(lines[0].split()[0])
    return np.array([float(l) for l in lines[1:1 + n]])


def scipy_solve(A, b):
    t0 = time.perf_counter()
    with np.errstate(all="ignore"):
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            x = spla.spsolve(A.tocsc(), b)
    return x, time.perf_counter() - t0


def main():
    sla, data = sys.argv[1], sys.argv[2]
    table = "--table" in sys.argv
    only = [a for a in sys.argv[3:] if not a.startswith("--")]
    failures, rows = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for name, expect in MATRICES.items():
            if only and name not in only:
                continue
            path = os.path.join(data, name + ".mtx")
            A = sp.csr_matrix(scipy.io.mmread(path)).astype(float)
            n = A.shape[0]
            xt = 1.0 + (np.arange(n) % 7) / 10.0
            b = A @ xt
            xs, ts = scipy_solve(A, b)
            fs = np.linalg.norm(xs - xt) / np.linalg.norm(xt) if np.all(np.isfinite(xs)) else np.inf
            bpath, xpath = os.path.join(tmp, "b.mtx"), os.path.join(tmp, "x.mtx")
            write_vector(bpath, b)
            if os.path.exists(xpath):
                os.remove(xpath)
            t0 = time.perf_counter()
            p = subprocess.run([sla, "solve", path, "--rhs", bpath, "--out", xpath, "--json"],
                               capture_output=True, text=True)
            wall = time.perf_counter() - t0
            row = {"matrix": name, "n": n, "nnz": A.nnz, "exit": p.returncode,
                   "scipy_fwd": float(fs), "scipy_seconds": ts, "sla_wall_seconds": wall}
            if expect == "singular":
                ok = p.returncode == 2 and "singular" in (p.stderr + p.stdout).lower()
                row.update({"backend": "refused", "message": p.stderr.strip()[:120]})
                if not ok:
                    failures.append("%s: singular matrix not refused as singular (exit %d): %s %s"
                                    % (name, p.returncode, p.stdout.strip()[:300], p.stderr.strip()[:300]))
            else:
                if p.returncode != 0:
                    failures.append("%s: exit %d: %s" % (name, p.returncode, p.stderr.strip()[:300]))
                    rows.append(row)
                    continue
                info = json.loads(p.stdout.strip().splitlines()[-1])
                x = read_vector(xpath)
                fwd = np.linalg.norm(x - xt) / np.linalg.norm(xt)
                rel = np.linalg.norm(b - A @ x) / np.linalg.norm(b)
                row.update({"backend": info.get("backend"), "method": info.get("method"),
                            "sla_seconds": info.get("setup_seconds", 0) + info.get("solve_seconds", 0),
                            "relres": float(rel), "fwd": float(fwd), "rcond": info.get("rcond"),
                            "berr": info.get("backward_error"), "note": info.get("note", "")})
                if not (fwd <= 10 * fs + 1e-12):
                    failures.append("%s: forward error %.3g > 10 x SciPy's %.3g + 1e-12 (%s)"
                                    % (name, fwd, fs, info.get("note", "")))
                if not (rel <= 1e-12):
                    failures.append("%s: relative residual %.3g > 1e-12 (%s)" % (name, rel, info.get("note", "")))
            rows.append(row)
            print("%-24s n=%-6d exit=%d %-8s fwd=%-10s scipy=%.2e relres=%s" %
                  (name, n, p.returncode, row.get("method", "refused"),
                   "%.2e" % row["fwd"] if "fwd" in row else "-", fs,
                   "%.1e" % row["relres"] if "relres" in row else "-"), flush=True)
    if table:
        print()
        print("| matrix | n | nnz | sla method (backend) | sla time (s) | relres | forward error | SciPy forward error | SciPy time (s) |")
        print("|---|---|---|---|---|---|---|---|---|")
        for r in rows:
            if "fwd" in r:
                print("| %s | %d | %d | %s (%s) | %.2e | %.1e | %.1e | %.1e | %.2e |" %
                      (r["matrix"], r["n"], r["nnz"], r["method"], r["backend"], r["sla_seconds"],
                       r["relres"], r["fwd"], r["scipy_fwd"], r["scipy_seconds"]))
            else:
                print("| %s | %d | %d | refused: singular (exit %d) | - | - | - | %.1e | %.2e |" %
                      (r["matrix"], r["n"], r["nnz"], r["exit"], r["scipy_fwd"], r["scipy_seconds"]))
        print()
        print(json.dumps(rows))
    for f in failures:
        print("FAIL " + f)
    print("%d matrices, %d failures" % (len(rows), len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
