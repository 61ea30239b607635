"""The anchor comparison's report: medians over the interleaved rounds of
bench/anchors/run_anchors.sh, PETSc / sla ratios, the matrix check (nnz and
checksum equal on both sides), bench/out/anchors.json, the Markdown section
bench/out/anchors.md (run_all.sh puts it into RESULTS.md) and the plot
plots/anchors.png (time to solution against unknowns, one line per system).

    python3 report_anchors.py RAW.jsonl OUT_DIR PLOTS_DIR
"""
import json
import os
import shutil
import statistics
import subprocess
import sys

NAMES = {"p2d": "2-D Poisson", "p3d": "3-D Poisson", "diff": "training step: 2-D diffusion"}


def label(r):
    par = f"{r['ranks']} rank{'s' if r['ranks'] > 1 else ''}" if r["ranks"] > 1 or r["system"] == "petsc" \
        else f"{r['threads']} thread{'s' if r['threads'] > 1 else ''}"
    warm = ", warm start" if r.get("start") == "warm" else ""
    return f"{r['system']} {r['solver']}, {par}{warm}"


def cores(r):
    return r["ranks"] * r["threads"]


def summarize(runs):
    groups = {}
    for r in runs:
        r.setdefault("start", "cold")
        key = (r["problem"], r["N"], r["system"], r["solver"], r["ranks"], r["threads"], r["start"])
        groups.setdefault(key, []).append(r)
    rows = []
    for key, rs in groups.items():
        m = dict(rs[0])
        for f in ("setup_s", "solve_s", "total_s", "first_setup_s", "first_total_s", "iterations",
                  "adjoint_s", "adjoint_iterations", "step_s", "levels", "operator_complexity",
                  "grid_complexity"):
            if all(f in x for x in rs):
                m[f] = statistics.median(x[f] for x in rs)
        m["residual"] = max(x["residual"] for x in rs)
        m["converged"] = all(x["converged"] for x in rs)
        m["other_load_pct"] = max(x["other_load_pct"] for x in rs)
        m["reps"] = len(rs)
        m["label"] = label(m)
        m["cores"] = cores(m)
        rows.append(m)
    return rows


def check_matrices(runs):
    """Problem -> (ok, note): every run of a problem saw the same nnz and checksum."""
    res = {}
    for key in sorted({(r["problem"], r["N"]) for r in runs}):
        rs = [r for r in runs if (r["problem"], r["N"]) == key]
        nnz = {r["nnz"] for r in rs}
        c0 = rs[0]["checksum"]
        bad = [r for r in rs if abs(r["checksum"] - c0) > 1e-12 * abs(c0)]
        ok = len(nnz) == 1 and not bad
        res[key] = (ok, f"nnz {rs[0]['nnz']}, checksum {c0:.15g}" if ok else
                    f"MISMATCH: nnz {sorted(nnz)}, checksums "
                    f"{sorted({(r['system'], r['checksum']) for r in rs})}")
    return res


def ratio_ref(rows, r):
    """sla's row to compare r with: cg+saamg on the same number of cores, from the same start
    (cold x0 = 0, or warm: the previous step's x)."""
    ref = [x for x in rows if x["system"] == "sla" and x["solver"] == "cg+saamg" and x["cores"] == r["cores"]
           and (x["problem"], x["N"], x["start"]) == (r["problem"], r["N"], r["start"])]
    return ref[0] if ref else None


def plot(rows, plots, out):
    gp = shutil.which("gnuplot")
    if not gp:
        return None, "anchors.png not drawn: gnuplot not found (make bench installs gnuplot-nox)"
    tmp = os.path.join(out, "plot_anchors")
    os.makedirs(tmp, exist_ok=True)
    png = os.path.join(plots, "anchors.png")
    panels = []
    labels = sorted({r["label"] for r in rows})  # the same colour for a system in every panel
    for prob in ("p2d", "p3d", "diff"):
        pr = [r for r in rows if r["problem"] == prob]
        if not pr:
            continue
        cmds = []
        for lab in sorted({r["label"] for r in pr}):
            i = labels.index(lab)
            pts = sorted((r["n"], r["total_s"]) for r in pr if r["label"] == lab)
            fname = f"{prob}_{i}.dat"
            with open(os.path.join(tmp, fname), "w") as f:
                f.write("".join(f"{n} {t}\n" for n, t in pts))
            style = "lw 3 pt 7" if lab.startswith("sla") else "dt 2 lw 2 pt 4"
            cmds.append(f"'{fname}' using 1:2 with linespoints lc {i + 1} {style} title '{lab}'")
        title = NAMES[prob] + (" (refresh + solve)" if prob == "diff" else " (set-up + solve)")
        panels.append(f"set title '{title}'\nplot " + ", ".join(cmds) + "\n")
    sc = ("if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {\n  set terminal pngcairo size 1500,560 font 'sans,10'\n"
          "} else {\n  set terminal png size 1500,560\n}\n"
          f"set output '{png}'\ncd '{tmp}'\nset grid\nset key below font ',8' maxrows 4\n"
          f"set multiplot layout 1,{len(panels)}\nset logscale xy\nset format x '10^{{%L}}'\n"
          "set xlabel 'unknowns n'\nset ylabel 'seconds to solution'\n" + "".join(panels) + "unset multiplot\n")
    r = subprocess.run([gp], input=sc, text=True, capture_output=True)
    if r.returncode != 0 or not os.path.exists(png):
        return None, "anchors.png: gnuplot failed: " + r.stderr.strip()[:300]
    return "plots/anchors.png", None


def main():
    raw, out, plots = sys.argv[1:4]
    runs = [json.loads(l) for l in open(raw) if l.strip().startswith("{")]
    if not runs:
        sys.exit("report_anchors.py: no runs in " + raw)
    rows = summarize(runs)
    checks = check_matrices(runs)
    for r in rows:
        ref = ratio_ref(rows, r)
        r["ratio_vs_sla_saamg"] = r["total_s"] / ref["total_s"] if ref and ref["total_s"] > 0 else None
        r["step_ratio_vs_sla_saamg"] = (r["step_s"] / ref["step_s"] if ref and r.get("adjoint") and ref.get("adjoint")
                                        and ref["step_s"] > 0 else None)
    img, pnote = plot(rows, plots, out)
    json.dump({"rows": rows, "matrix_check": {f"{p}:{N}": {"ok": ok, "note": t} for (p, N), (ok, t) in checks.items()},
               "petsc": next((r.get("petsc") for r in runs if r.get("petsc")), None)},
              open(os.path.join(out, "anchors.json"), "w"), indent=1)
    L = []
    w = L.append
    pv = next((r.get("petsc") for r in runs if r.get("petsc")), "?")
    w("## Anchor comparison: sla against PETSc")
    w("")
    w(f"`bash bench/anchors/run_anchors.sh $BUILD bench/out bench/plots` (run_all.sh part `anchors`). PETSc {pv} "
      "(Debian petsc-dev: CG + GAMG with its defaults, CG + hypre BoomerAMG through PCHYPRE), 1 and 2 MPI "
      "ranks, against sla's CG + saamg (its own smoothed aggregation) on 1 and 2 threads and CG + BoomerAMG "
      "(sla's precond amg, the same Debian hypre; 2 ranks: sla_dist_solver). Same matrices: the PETSc driver "
      "builds them from its own copy of sla's stencils (bench/anchors/anchor_gen.h, bitwise equal to "
      "sla_gen_*: tests/test_anchor_gen.c) and both sides print nnz and a position-weighted checksum, "
      "compared below. b = A 1, x0 = 0, CG to ||r|| / ||b|| <= 1e-8 (PETSc: KSP_NORM_UNPRECONDITIONED), "
      "the residual the true one computed after. Time to solution = set-up + solve (matrix assembly "
      "excluded); training step: kappa *= 1 + 0.01 u per step, refresh + solve (sla: sla_solver_refresh "
      "with saamg_reuse = interpolation; PETSc: PCSetUp with PCGAMGSetReuseInterpolation, hypre a full "
      "set-up), medians over the steps; each step also solves the adjoint system A^T l = 1 with the refreshed "
      "hierarchy (sla_solver_solve_vjp, gb only; PETSc: KSPSolve with the same KSP, A being symmetric), "
      "x0 = 0, its time in 'adjoint s', refresh + solve + adjoint in 'step s' and its ratio in 'step ratio'. "
      "Rows marked 'warm start' start each step's solve from the previous step's x and its adjoint from the "
      "previous adjoint solution (sla: use_x0; PETSc: KSPSetInitialGuessNonzero) and are compared with sla's "
      "warm row; the goal's comparison is cold. Rows 'cg+saamg(theta=T)' use a tuned fine-level strength "
      "threshold (saamg_theta; SLA_BENCH_ANCHOR_THETA). Rows 'cg+saamg(reuse=hierarchy)', "
      "'cg+gamg(keep-pc)' and 'cg+hypre(keep-pc)' keep the whole preconditioner across steps (sla: "
      "saamg_reuse=hierarchy, its coarse levels kept while every entry of A stays within 25 %; PETSc: "
      "KSPSetReusePreconditioner). "
      "One process per run; every configuration once per round, "
      "rounds interleaved (ABAB), medians over the rounds. Ratio: the row's total time / sla CG + saamg's "
      "on the same number of cores (> 1: slower than sla CG + saamg). AMGCL is left out: Debian has no package of it "
      "(`apt-cache search amgcl` finds nothing).")
    w("")
    for prob in ("p2d", "p3d", "diff"):
        for N in sorted({r["N"] for r in rows if r["problem"] == prob}):
            pr = sorted((r for r in rows if (r["problem"], r["N"]) == (prob, N)),
                        key=lambda r: (r["start"], r["cores"], r["system"] != "sla", r["solver"]))
            ok, note = checks[(prob, N)]
            step = prob == "diff"
            adj = step and any(r.get("adjoint") for r in pr)
            w(f"**{NAMES[prob]}, N = {N}, n = {pr[0]['n']}** (matrices: {'equal' if ok else 'DIFFERENT'}, {note})")
            w("")
            w(f"| system | {'refresh' if step else 'set-up'} s | solve s | total s | iterations | residual | "
              f"ratio | {'adjoint s | adjoint its | step s | step ratio | ' if adj else ''}"
              f"{'first solve s | ' if step else ''}rounds | other load |")
            w("|---|---|---|---|---|---|---|" + ("---|---|---|---|" if adj else "") + ("---|" if step else "") + "---|---|")
            for r in pr:
                rt = f"{r['ratio_vs_sla_saamg']:.2f}" if r["ratio_vs_sla_saamg"] else "-"
                conv = "" if r["converged"] else " (not converged)"
                w(f"| {r['label']} | {r['setup_s']:.3f} | {r['solve_s']:.3f} | **{r['total_s']:.3f}** | "
                  f"{r['iterations']:.0f} | {r['residual']:.1e}{conv} | {rt} | "
                  + ((f"{r['adjoint_s']:.3f} | {r['adjoint_iterations']:.0f} | **{r['step_s']:.3f}** | "
                      + (f"{r['step_ratio_vs_sla_saamg']:.2f} | " if r.get("step_ratio_vs_sla_saamg") else "- | ")
                      if r.get("adjoint") else "- | - | - | - | ") if adj else "")
                  + (f"{r['first_total_s']:.3f} | " if step else "")
                  + f"{r['reps']} | {r['other_load_pct']:.0f} % |")
            w("")
            hier = sorted({(r["solver"], r["levels"], r["operator_complexity"], r["grid_complexity"])
                           for r in pr if r.get("levels")})
            if hier:
                w("saamg's hierarchy (sla_solver_hierarchy): " + "; ".join(
                    f"{sv}: {lv:.0f} levels, operator complexity {oc:.3f}, grid complexity {gc:.3f}"
                    for sv, lv, oc, gc in hier))
                w("")
    if img:
        w(f"![time to solution against unknowns, sla and PETSc]({img})")
        w("")
    if pnote:
        w("Plot note: " + pnote)
        w("")
    open(os.path.join(out, "anchors.md"), "w").write("\n".join(L) + "\n")
    print("\n".join(L))
    bad = [k for k, (ok, _) in checks.items() if not ok]
    if bad:
        sys.exit(f"report_anchors.py: the matrices differ between sla and PETSc for {bad}")


if __name__ == "__main__":
    main()
