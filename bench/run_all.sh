#!/usr/bin/env bash
# Run sla's benchmarks and (re)write bench/RESULTS.md.
#
#   bash bench/run_all.sh [BUILD_DIR]        (default: build; `make bench` uses it)
#
# BUILD_DIR must hold bin/sla_bench_cg and bin/sla_bench_adjoint_mem, built
# in Release with -DSLA_NATIVE=ON. SciPy runs with Debian's /usr/bin/python3
# (python3-scipy: `SLA_DEPS_BENCH=1 bash scripts/install-deps.sh`).
# Raw outputs go to bench/out/ (git-ignored).
#
# Settings (environment):
#   SLA_BENCH_SIZES   grid sides N, n = N^2          (default 100,316,1000)
#   SLA_BENCH_REPS    repetitions per size, median   (default 5,5,3)
#   SLA_BENCH_SCIPY_REPS  the same for SciPy         (default 5,5,2: 25 s a run at 1e6)
#   SLA_BENCH_THREADS thread counts for sla          (default 1,2)
#   SLA_BENCH_KS      iteration counts, adjoint memory (default "100 1000 5000")
#   SLA_BENCH_ADJ_N   grid side for the adjoint memory runs (default 1000)
#   SLA_BENCH_REF=1   also time a plain hand-written CG (the floor; slower run)
#   SLA_BENCH_RETRIES measure a configuration again when other processes took
#                     more than 15 % of the machine meanwhile (default 1)
#   SLA_BENCH_WAIT    seconds to wait for other processes to go quiet (default 30)
#   SLA_BENCH_TORCH_KS  iteration counts, sla vs unrolled torch CG at n = 1e5
#                     (default "10 50 100 200 400 600"; 600 takes about 6 GB in torch)
#   SLA_BENCH_HIST_N  grid side of the residual-history runs (default 256)
#   SLA_BENCH_DIRECT_ARGS  arguments of sla_bench_direct (default: a sweep to 1e6 2D,
#                     1e6 3D and 1e6 convection-diffusion, SciPy at 1e4..1e6, the batch)
#   SLA_BENCH_AMG_ARGS     arguments of sla_bench_amg (default: 2D and 3D Poisson 1e6)
#   SLA_BENCH_QUICK=1 small sizes everywhere (a few minutes; checks the pipeline);
#                     writes bench/out/RESULTS-quick.md, not bench/RESULTS.md
#   SLA_BENCH_RESULTS the report's path (default bench/RESULTS.md; plots/ beside it)
#   SLA_BENCH_DISTAMG_ARGS arguments of sla_bench_dist_amg (2 MPI ranks; default 2D Poisson 1e6, 4e6)
#   SLA_BENCH_PARTS   which parts to run (default cg,adjoint,torch,history,direct,amg,distamg;
#                     distsaamg: CG + the distributed saamg on 2 ranks against 2 threads,
#                     bench/out/dist_saamg.txt);
#                     RESULTS.md is written from what bench/out/ holds. Not in the default:
#                     lsq (LSQR/LSMR vs SciPy at 1e6 x 2.5e5, QR at 2.5e5 x 6.25e4; about
#                     10 minutes) and svds (k = 10 vs SciPy svds at 1e5 x 5e4; a few minutes):
#                     SLA_BENCH_PARTS=lsq,svds bash bench/run_all.sh
#   SLA_BENCH_LSQ_ARGS   arguments of sla_bench_lsq (default: 1e6 rows, 100 iterations, 3 reps)
#   SLA_BENCH_SVDS_ARGS  arguments of sla_bench_svds (default: 1e5 rows, k = 10, 3 reps)
#   anchors (issue 22): sla against PETSc (CG + GAMG, CG + hypre, 1 and 2 ranks), runs
#                     interleaved; in the default parts when BUILD_DIR has bin/sla_bench_petsc
#                     (cmake -DSLA_BENCH_PETSC=ON with petsc-dev; `make bench` does it when
#                     pkg-config finds PETSc). Settings: bench/anchors/run_anchors.sh.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$here")
build=${1:-build}
case $build in /*) ;; *) build=$PWD/$build ;; esac
out=$here/out
py=/usr/bin/python3

quick=${SLA_BENCH_QUICK:-0}
if [ "$quick" = 1 ]; then
  d_sizes=100,316; d_reps=3,3; d_sreps=3,2; d_ks="100 1000"; d_adjn=316
  d_tks="10 50 100"; d_hist=64
  d_direct="--parts sweep,scipy,batch --sizes2d 32,100,316 --sizes3d 10,22 --sizescd 32,100 --scipy-sizes 100,316 --batch 100 --max-run 10 --quiet-wait 2"
  d_amg="--problems p2d-1m --methods amg,saamg,cholmod --reps 1 --reps-slow 1"
  d_distamg="--problems p2d-64k,p2d-1m --reps 1"
  d_lsq="--rows 20000 --qr-rows 20000 --reps 1 --quiet-wait 2"
  d_svds="--rows 20000 --reps 1 --quiet-wait 2"
else
  d_sizes=100,316,1000; d_reps=5,5,3; d_sreps=5,5,2; d_ks="100 1000 5000"; d_adjn=1000
  d_tks="10 50 100 200 400 600"; d_hist=256
  d_direct="--parts sweep,scipy,batch --sizes2d 32,100,316,1000 --sizes3d 10,22,46,100 --sizescd 32,100,316,1000 --scipy-sizes 100,316,1000 --max-run 20 --quiet-wait 5"
  d_amg="--problems p2d-1m,p2d-4m,p3d-1m,aniso-1m --methods amg,saamg,jacobi,cholmod --reps 3 --reps-slow 1"
  d_distamg="--problems p2d-1m,p2d-4m --reps 3"
  d_lsq="--rows 1000000 --iters 100 --methods lsqr,lsmr --qr-rows 250000 --reps 3 --quiet-wait 10"
  d_svds="--rows 100000 --k 10 --reps 3 --quiet-wait 10"
fi
lsq_args=${SLA_BENCH_LSQ_ARGS:-$d_lsq}
svds_args=${SLA_BENCH_SVDS_ARGS:-$d_svds}
distamg_args=${SLA_BENCH_DISTAMG_ARGS:-$d_distamg}
sizes=${SLA_BENCH_SIZES:-$d_sizes}
reps=${SLA_BENCH_REPS:-$d_reps}
scipy_reps=${SLA_BENCH_SCIPY_REPS:-$d_sreps}
threads=${SLA_BENCH_THREADS:-1,2}
ks=${SLA_BENCH_KS:-$d_ks}
adj_n=${SLA_BENCH_ADJ_N:-$d_adjn}
torch_ks=${SLA_BENCH_TORCH_KS:-$d_tks}
hist_n=${SLA_BENCH_HIST_N:-$d_hist}
direct_args=${SLA_BENCH_DIRECT_ARGS:-$d_direct}
amg_args=${SLA_BENCH_AMG_ARGS:-$d_amg}
d_parts=cg,adjoint,torch,history,direct,amg,distamg
[ -x "$build/bin/sla_bench_petsc" ] && d_parts=$d_parts,anchors
parts=${SLA_BENCH_PARTS:-$d_parts}
# Quick runs report to bench/out/ so that they never replace the real report.
if [ "$quick" = 1 ]; then results=${SLA_BENCH_RESULTS:-$out/RESULTS-quick.md}
else results=${SLA_BENCH_RESULTS:-$here/RESULTS.md}; fi
has_part() { case ",$parts," in *",$1,"*) return 0 ;; esac; return 1; }
wait_s=${SLA_BENCH_WAIT:-30}
retries=${SLA_BENCH_RETRIES:-1}

for b in sla_bench_cg sla_bench_adjoint_mem; do
  if [ ! -x "$build/bin/$b" ]; then
    echo "run_all.sh: $build/bin/$b not found; build it first (make bench)" >&2
    exit 1
  fi
done
if ! "$py" -c 'import scipy' 2>/dev/null; then
  echo "run_all.sh: $py cannot import scipy; run SLA_DEPS_BENCH=1 bash scripts/install-deps.sh" >&2
  exit 1
fi
mkdir -p "$out"

. "$here/load.sh"   # busy_pct

# The machines are shared: wait (a little) for other work to finish.
waited=0
while :; do
  load=$(busy_pct)
  if [ "$load" -le 10 ] || [ "$waited" -ge "$wait_s" ]; then break; fi
  [ "$waited" = 0 ] && echo "run_all.sh: machine ${load}% busy; waiting up to ${wait_s}s for it to go quiet" >&2
  sleep 4; waited=$(( waited + 5 ))
done
echo "$load" > "$out/load_at_start.txt"

t_start=$(date +%s)
ref_flag=""
[ "${SLA_BENCH_REF:-0}" = 1 ] && ref_flag="--ref"

cmd_cg="$build/bin/sla_bench_cg --sizes $sizes --reps $reps --threads $threads --retries $retries --json $out/cg.json${ref_flag:+ $ref_flag}"
cmd_scipy="$py $here/scipy_cg.py --sizes $sizes --reps $scipy_reps --retries $retries"
cmd_adj="$build/bin/sla_bench_adjoint_mem K $adj_n 2   (K in: $ks; one process each)"

if has_part cg; then
echo "== sla CG (STREAM triad, then CG) ==" >&2
# shellcheck disable=SC2086
"$build/bin/sla_bench_cg" --sizes "$sizes" --reps "$reps" --threads "$threads" \
  --retries "$retries" --json "$out/cg.json" $ref_flag | tee "$out/cg.txt"

echo "== SciPy CG ==" >&2
"$py" "$here/scipy_cg.py" --sizes "$sizes" --reps "$scipy_reps" --retries "$retries" \
  > "$out/scipy.jsonl"
fi

if has_part adjoint; then
echo "== adjoint memory ==" >&2
: > "$out/adjoint_mem.jsonl"
for k in $ks; do
  "$build/bin/sla_bench_adjoint_mem" "$k" "$adj_n" 2 >> "$out/adjoint_mem.jsonl"
done
fi

# sla's adjoint (one extra solve) against differentiating through k unrolled
# CG iterations with torch autograd, same n = 316^2 and k, one process each.
cmd_torch="$build/bin/sla_bench_adjoint_mem K 316 2; $py bench/torch_unrolled_cg.py K 316 2   (K in: $torch_ks)"
if has_part torch; then
echo "== adjoint memory: sla vs unrolled CG in torch ==" >&2
: > "$out/adjoint_torch.jsonl"
: > "$out/adjoint_sla_small.jsonl"
have_torch=0
"$py" -c 'import torch' 2>/dev/null && have_torch=1
[ "$have_torch" = 1 ] || echo "run_all.sh: $py cannot import torch (python3-torch); torch side skipped" >&2
avail_mib=$(awk '/MemAvailable/ {print int($2 / 1024)}' /proc/meminfo)
for k in $torch_ks; do
  "$build/bin/sla_bench_adjoint_mem" "$k" 316 2 >> "$out/adjoint_sla_small.jsonl"
  # about 10.5 MiB per unrolled iteration at n = 1e5: skip what cannot fit
  if [ "$have_torch" = 1 ] && [ $(( 300 + 11 * k )) -lt $(( avail_mib * 3 / 4 )) ]; then
    "$py" "$here/torch_unrolled_cg.py" "$k" 316 2 >> "$out/adjoint_torch.jsonl" || \
      echo "run_all.sh: torch unrolled CG failed at k = $k" >&2
  fi
done
fi

cmd_hist="$build/bin/sla_bench_history --N $hist_n --json bench/out/history.jsonl"
if has_part history; then
echo "== residual against iteration, every preconditioner ==" >&2
"$build/bin/sla_bench_history" --N "$hist_n" --json "$out/history.jsonl" | tee "$out/history.txt"
fi

cmd_direct="$build/bin/sla_bench_direct $direct_args --python $py --scipy-script bench/scipy_direct.py --tmp bench/out --json bench/out/direct.json"
if has_part direct; then
echo "== direct solvers, Krylov and SciPy: time to solution against size ==" >&2
# shellcheck disable=SC2086
"$build/bin/sla_bench_direct" $direct_args --python "$py" --scipy-script "$here/scipy_direct.py" \
  --tmp "$out" --json "$out/direct.json" | tee "$out/direct.txt"
fi

cmd_amg="$build/bin/sla_bench_amg $amg_args --json bench/out/amg.json"
if has_part amg; then
echo "== AMG ==" >&2
# shellcheck disable=SC2086
"$build/bin/sla_bench_amg" $amg_args --json "$out/amg.json" | tee "$out/amg.txt"
fi
# CG + AMG over 2 MPI ranks (one BoomerAMG hierarchy across both), with
# the single-process solver in the same run
cmd_distamg="mpiexec -n 2 $build/bin/sla_bench_dist_amg $distamg_args --json bench/out/dist_amg.json"
if has_part distamg && [ -x "$build/bin/sla_bench_dist_amg" ] && command -v mpiexec >/dev/null; then
echo "== AMG over 2 MPI ranks ==" >&2
# shellcheck disable=SC2086
OMP_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader \
  OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_mpi_yield_when_idle=1 \
  OMPI_MCA_rmaps_base_oversubscribe=1 timeout 900 \
  mpiexec -n 2 "$build/bin/sla_bench_dist_amg" $distamg_args \
  --json "$out/dist_amg.json" | tee "$out/dist_amg.txt" || echo "sla: the 2-rank AMG benchmark failed" >&2
fi
# CG + the distributed saamg over 2 MPI ranks (sla's own hierarchy across
# both) against one process with 2 threads, and the messages per level
# (part distsaamg, not in the default; text only, bench/out/dist_saamg.txt)
if has_part distsaamg && [ -x "$build/bin/sla_bench_dist_saamg" ] && command -v mpiexec >/dev/null; then
echo "== saamg over 2 MPI ranks ==" >&2
OMP_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader \
  OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_mpi_yield_when_idle=1 \
  OMPI_MCA_rmaps_base_oversubscribe=1 timeout 900 \
  sh -c 'for r in 1 2; do
    # 2 ranks, then one process with 2 threads (and the 1-rank distributed
    # solver) as a separate job: run inside the 2-rank job, the serial solve
    # shared the cores with the other rank polling in its barrier (28-33 %
    # other load) and, with the default --bind-to core, ran its 2 threads
    # on one core
    mpiexec --bind-to none -n 2 "$1/bin/sla_bench_dist_saamg" --problems p2d-1m,p2d-4m --reps 3 --serial-threads 0
    mpiexec --bind-to none -n 1 "$1/bin/sla_bench_dist_saamg" --problems p2d-1m,p2d-4m --reps 3 --serial-threads 2
  done' sh "$build" | tee "$out/dist_saamg.txt" || echo "sla: the 2-rank saamg benchmark failed" >&2
fi
# LSQR / LSMR (fixed iterations) and svds (k largest) against SciPy, the
# SciPy process running beside sla's and the runs alternating
cmd_lsq="$build/bin/sla_bench_lsq $lsq_args --retries $retries --python $py --script bench/scipy_lsq.py --tmp bench/out --json bench/out/lsq.json"
if has_part lsq; then
echo "== least squares: LSQR / LSMR against SciPy, QR ==" >&2
# shellcheck disable=SC2086
"$build/bin/sla_bench_lsq" $lsq_args --retries "$retries" --python "$py" --script "$here/scipy_lsq.py" \
  --tmp "$out" --json "$out/lsq.json" | tee "$out/lsq.txt"
fi
cmd_svds="$build/bin/sla_bench_svds $svds_args --retries $retries --python $py --script bench/scipy_svds.py --tmp bench/out --json bench/out/svds.json"
if has_part svds; then
echo "== svds: k largest singular triplets against SciPy ==" >&2
# shellcheck disable=SC2086
"$build/bin/sla_bench_svds" $svds_args --retries "$retries" --python "$py" --script "$here/scipy_svds.py" \
  --tmp "$out" --json "$out/svds.json" | tee "$out/svds.txt"
fi
# sla against PETSc on the same matrices, the runs interleaved (issue 22)
if has_part anchors; then
echo "== anchors: sla against PETSc ==" >&2
SLA_BENCH_WAIT=$wait_s bash "$here/anchors/run_anchors.sh" "$build" "$out" "$(dirname "$results")/plots" \
  > "$out/anchors.txt" || echo "run_all.sh: the anchor comparison failed (bench/out/anchors.txt)" >&2
fi
t_total=$(( $(date +%s) - t_start ))

# ---- RESULTS.md ----------------------------------------------------------
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
l3=$(lscpu 2>/dev/null | awk -F: '/^L3 cache/ {gsub(/^ +/, "", $2); print $2}')
mem=$(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo)
cc=$(sed -n 's/^CMAKE_C_COMPILER:[A-Z]*=//p' "$build/CMakeCache.txt" 2>/dev/null || true)
ccver=$("${cc:-cc}" --version 2>/dev/null | head -1 || echo unknown)
native=$(sed -n 's/^SLA_NATIVE:[A-Z]*=//p' "$build/CMakeCache.txt" 2>/dev/null || echo "?")
btype=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$build/CMakeCache.txt" 2>/dev/null || echo "?")
commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
dirty=""
# (not counting what this run itself rewrites: the report and its plots)
if git -C "$root" status --porcelain -- . ':(exclude)bench/RESULTS.md' ':(exclude)bench/plots' \
    2>/dev/null | grep -q .; then dirty=" (with uncommitted changes)"; fi

RB_DATE=$(date -u '+%Y-%m-%d %H:%M UTC')
RB_NPROC=$(nproc)
RB_KERNEL=$(uname -r)
export RB_DATE RB_NPROC RB_KERNEL RB_CPU="$cpu" RB_L3="$l3" \
  RB_MEM="$mem" RB_CC="$ccver" RB_NATIVE="$native" RB_BTYPE="$btype" RB_COMMIT="$commit$dirty" \
  RB_OUT="$out" RB_TOTAL="$t_total" RB_LOAD="$load" RB_WAITED="$waited" RB_PARTS="$parts" \
  RB_CMD_CG="$cmd_cg" RB_CMD_SCIPY="$cmd_scipy" RB_CMD_ADJ="$cmd_adj" RB_BUILD="$build" RB_RETRIES="$retries" \
  RB_CMD_TORCH="$cmd_torch" RB_CMD_HIST="$cmd_hist" RB_CMD_DIRECT="$cmd_direct" RB_CMD_AMG="$cmd_amg" RB_CMD_DISTAMG="$cmd_distamg" \
  RB_CMD_LSQ="$cmd_lsq" RB_CMD_SVDS="$cmd_svds" \
  RB_PLOTS="$(dirname "$results")/plots"
"$py" - "$results" <<'PYEOF'
import json, os, sys

E = os.environ
out = E["RB_OUT"]
if not os.path.exists(os.path.join(out, "cg.json")):
    sys.exit("run_all.sh: bench/out/cg.json is missing: run the cg part at least once")
cg = json.load(open(os.path.join(out, "cg.json")))
def _jsonl(name):
    path = os.path.join(out, name)
    return [json.loads(l) for l in open(path) if l.strip()] if os.path.exists(path) else []
scipy = _jsonl("scipy.jsonl")
adj = _jsonl("adjoint_mem.jsonl")
# The publishing rule: a measurement whose repetitions ran while other
# processes used more than this share of the machine is not published (its
# row says so and asks for a rerun), and no ratio or goal is computed from it.
MAX_LOAD = float(E.get("SLA_BENCH_MAX_LOAD", "15"))
unpublished = []
def disturbed(r, what):
    ld = r.get("other_load_pct", 0.0)
    if ld is not None and ld > MAX_LOAD:
        unpublished.append(f"{what} ({ld:.0f} % other load)")
        return True
    return False
sp = {r["N"]: r for r in scipy}
runs = cg["cg"]
threads = sorted({r["threads"] for r in runs})
sizes = sorted({r["N"] for r in runs})
by = {(r["N"], r["threads"]): r for r in runs}
triad = {t["threads"]: t for t in cg["stream_triad"]}
has_ref = any("ref_median_s" in r for r in runs)

def reps(r):
    a = r.get("attempts", 1)
    return f"{r['reps']}" + (f" (least disturbed of {a} sets)" if a > 1 else "")

def nn(r):
    return f"{r['n']} ({r['N']}^2)"

def rel(p):
    return p.replace(E["RB_BUILD"], "$BUILD").replace(os.path.dirname(out) + "/", "bench/")

L = []
w = L.append
w("# sla benchmarks")
w("")
w("Written by `bench/run_all.sh` (do not edit by hand; rerun `make bench` or "
  "`bash bench/run_all.sh BUILD_DIR`).")
w("")
w(f"- Date: {E['RB_DATE']}; commit {E['RB_COMMIT']}")
w(f"- Machine: {E['RB_NPROC']} CPUs (nproc), {E['RB_CPU']}, L3 {E['RB_L3'] or '?'}, "
  f"{E['RB_MEM']} RAM, Linux {E['RB_KERNEL']}")
w(f"- Build: {E['RB_BTYPE']}, SLA_NATIVE={E['RB_NATIVE']} (-O3 -march=native), {E['RB_CC']}")
if scipy:
    w(f"- SciPy {scipy[0]['scipy']}, NumPy {scipy[0]['numpy']} (Debian /usr/bin/python3)")
all_parts = "cg,adjoint,torch,history,direct,amg,distamg"
if set(E["RB_PARTS"].split(",")) - {"anchors"} != set(all_parts.split(",")):
    w(f"- This run: parts {E['RB_PARTS']} only; the other sections are carried over from the report "
      "this run replaced (their own dates and commands are in them; see git log bench/RESULTS.md).")
w(f"- Whole run: {E['RB_TOTAL']} s. Machine busy {E['RB_LOAD']} % just before the start "
  f"(waited {E['RB_WAITED']} s for it to go quiet). The machine is shared: the \"other load\" "
  "columns give the share of all CPUs that other processes used during each measurement "
  f"(a set disturbed by more than 15 % was measured again, at most {E['RB_RETRIES']} time(s), "
  "keeping the least disturbed); numbers taken under load are not representative: "
  "with another process on one of the two CPUs, every OpenMP fork/join of a 2-thread run "
  "waits for a descheduled thread.")
w("")
w("Commands (`$BUILD` is the build directory):")
w("")
w("```")
w(rel(E["RB_CMD_CG"]))
w(rel(E["RB_CMD_SCIPY"]))
w(rel(E["RB_CMD_ADJ"]))
w("```")
w("")
w("## Problem and accounting")
w("")
w("2D Poisson, 5-point Laplacian on an N x N grid (`sla_gen_poisson(ctx, 2, N, &A)`; SciPy: "
  "the same matrix from `diags`/`kron`), b = ones, x0 = 0, unpreconditioned CG to relative "
  "residual 1e-8 (SciPy 1.10: `cg(A, b, tol=1e-8, atol=0)`). Times are the median of the "
  "repetitions (wall clock of `sla_solver_solve` / `scipy.sparse.linalg.cg`, matrix assembly "
  "excluded). Residuals are the true ||b - A x|| / ||b|| (sla's `info.residual`).")
w("")
w("Bytes per CG iteration (minimal traffic of sla's three fused passes, 8-byte row "
  "pointers and values, 4-byte column indices, gathered reads of p assumed cached):")
w("")
w("```")
w("q = A p, p.q    rowptr 8 n + colind 4 nnz + values 8 nnz + p 8 n + q 8 n")
w("x, r update     read x, p, r, q; write x, r         48 n")
w("p = r + beta p  read r, p; write p                  24 n")
w("bytes/iteration = 96 n + 12 nnz      (n = 1e6: 96e6 + 12 * 4.996e6 = 156 MB)")
w("```")
w("")
w("GB/s = bytes/iteration / (time / iterations); % STREAM compares with the triad of the same "
  "thread count (the better of the measurements before and after the CG runs).")
w("")
w(f"Caches: this machine reports an L3 of {E['RB_L3'] or '?'}, shared with other tenants. The "
  "STREAM arrays (600 MB) do not fit, but the CG's working set (rowptr, colind, values, x, r, "
  "p, q: 8 (n+1) + 12 nnz + 32 n bytes = 1 MB, 10 MB, 100 MB) largely does, so the CG's "
  "\"bandwidth\" can exceed STREAM even at 1e6. \"% footprint triad\" is the fairer "
  "reference: the same triad over three arrays whose total size equals the CG's working set, "
  "measured just before and after each CG run with the same threads (the better of the two).")
w("")
w("## STREAM triad")
w("")
w("a = b + s c, 3 arrays of 25M doubles (200 MB each), OpenMP, best of "
  f"{cg['stream_triad'][0]['reps']}, 24 bytes per element.")
w("")
w("| threads | before CG | after CG |")
w("|---|---|---|")
for t in threads:
    s = triad[t]
    w(f"| {t} | {s['before_gbs']:.1f} GB/s | {s['after_gbs']:.1f} GB/s |")
w("")

def sla_table(t):
    w(f"## sla CG, {t} thread{'s' if t > 1 else ''}")
    w("")
    head = ("| n | nnz | iterations | time | ms / iteration | GB/s | % STREAM | "
            "% footprint triad | residual | reps | other load |")
    sep = "|---|---|---|---|---|---|---|---|---|---|---|"
    if has_ref:
        head += " hand-written CG, % STREAM |"
        sep += "---|"
    w(head)
    w(sep)
    for N in sizes:
        r = by.get((N, t))
        if not r:
            continue
        if disturbed(r, f"sla CG {t} thread(s), n = {r['n']}"):
            w(f"| {nn(r)} | {r['nnz']} | {r['iterations']} | not published: measured under "
              f"{r['other_load_pct']:.0f} % other load (> {MAX_LOAD:.0f} %); rerun on a quiet machine "
              "| | | | | | | |")
            continue
        line = (f"| {nn(r)} | {r['nnz']} | {r['iterations']} | {r['median_s']:.4g} s | "
                f"{1e3 * r['s_per_iter']:.4g} | {r['gbs']:.1f} | {r['pct_triad']:.0f} % | "
                f"{r['pct_footprint_triad']:.0f} % of {r['footprint_triad_gbs']:.0f} GB/s | "
                f"{r['residual']:.2e} | {reps(r)} | {r['other_load_pct']:.0f} % |")
        if has_ref:
            line += (f" {1e3 * r['ref_median_s'] / r['ref_iterations']:.4g} ms/it, "
                     f"{r['ref_pct_triad']:.0f} % |")
        w(line)
    w("")

for t in threads:
    sla_table(t)

w("## SciPy CG (`scipy.sparse.linalg.cg`, single-threaded)")
w("")
w("| n | iterations | time | ms / iteration | residual | reps | other load |")
w("|---|---|---|---|---|---|---|")
for N in sizes:
    r = sp.get(N)
    if r and disturbed(r, f"SciPy CG, n = {r['n']}"):
        w(f"| {nn(r)} | {r['iterations']} | not published: measured under "
          f"{r['other_load_pct']:.0f} % other load; rerun | | | | |")
    elif r:
        w(f"| {nn(r)} | {r['iterations']} | {r['median_s']:.4g} s | "
          f"{1e3 * r['median_s'] / r['iterations']:.4g} | {r['residual']:.2e} | {reps(r)} | "
          f"{r.get('other_load_pct', -1):.0f} % |")
w("")
w("## Comparison: SciPy time / sla time")
w("")
w("| n | " + " | ".join(f"sla {t} thread{'s' if t > 1 else ''}" for t in threads) + " |")
w("|---|" + "---|" * len(threads))
for N in sizes:
    if N in sp:
        cells = []
        for t in threads:
            r = by.get((N, t))
            ok_r = r and r.get("other_load_pct", 0) <= MAX_LOAD and sp[N].get("other_load_pct", 0) <= MAX_LOAD
            cells.append(f"{sp[N]['median_s'] / r['median_s']:.2f}x" if ok_r else "-")
        w(f"| {nn(sp[N])} | " + " | ".join(cells) + " |")
w("")

w("## Goals")
w("")
Nbig = max(sizes)
tbest = max(threads)
goals = []
r = by.get((Nbig, tbest))
if r and r.get("other_load_pct", 0) > MAX_LOAD:
    goals.append(f"- CG goals at n = {nn(r)}: not evaluated, the run was disturbed "
                 f"({r['other_load_pct']:.0f} % other load); rerun on a quiet machine")
    r = None
if r and tbest == 2:
    ok = r["pct_triad"] >= 85
    goals.append(f"- CG iteration at >= 85 % of the STREAM triad on 2 threads (n = "
                 f"{nn(r)}): {r['pct_triad']:.0f} % ({1e3 * r['s_per_iter']:.3g} ms/it, "
                 f"{r['gbs']:.1f} of {r['triad_gbs']:.1f} GB/s) -- **{'met' if ok else 'NOT met'}**; "
                 f"against the triad over the CG's own footprint: "
                 f"{r['pct_footprint_triad']:.0f} % of {r['footprint_triad_gbs']:.1f} GB/s")
if r and Nbig in sp and sp[Nbig].get("other_load_pct", 0) <= MAX_LOAD:
    ratio = sp[Nbig]["median_s"] / r["median_s"]
    ok = ratio >= 2.5
    goals.append(f"- >= 2.5x faster than SciPy's CG at n = {nn(r)} ({tbest} threads): "
                 f"{ratio:.2f}x ({r['median_s']:.3g} s vs {sp[Nbig]['median_s']:.3g} s) -- "
                 f"**{'met' if ok else 'NOT met'}**")
if adj:
    peaks = [a["peak_rss_mib"] for a in adj]
    spread = max(peaks) / min(peaks) - 1
    ok = spread <= 0.20
    goals.append(f"- Adjoint peak RSS flat within 20 % for k = "
                 f"{', '.join(str(a['k']) for a in adj)}: spread {100 * spread:.1f} % -- "
                 f"**{'met' if ok else 'NOT met'}**")
L.extend(goals or ["- (not evaluated: run with the default sizes and threads)"])
w("")

if adj:
    a0 = adj[0]
    w(f"## Adjoint memory (solve + VJP), 2D Poisson n = {nn(a0)}, {a0['threads']} threads")
    w("")
    w("`sla_solver_solve` with unpreconditioned CG, rtol 0, maxiter k (it returns "
      "SLA_NOT_CONVERGED, as intended: exactly k iterations), then `sla_solver_solve_vjp` with "
      "gx = ones, computing gb (n) and gA (nnz). One process per k; RSS in MiB. \"Vectors\" "
      "is the RSS once b, x, gx, gb, gA are allocated and touched; the peak is `ru_maxrss` after "
      "the VJP; the increment is peak minus vectors (what solve + VJP add). The benchmark sets "
      "mallopt(M_MMAP_MAX, 65536) and M_MMAP_THRESHOLD = 1 MiB so that freed work arrays leave "
      "the resident set: libsuperlu_dist, which HYPRE brings in, calls mallopt(M_MMAP_MAX, 0) "
      "when it is loaded, and then every allocation comes from the brk heap.")
    w("")
    w("| k | forward its | adjoint its | after matrix | + vectors | after solve | after VJP | "
      "peak | increment | solve | VJP |")
    w("|---|---|---|---|---|---|---|---|---|---|---|")
    for a in adj:
        w(f"| {a['k']} | {a['solve_iterations']} | {a['vjp_iterations']} | "
          f"{a['rss_after_matrix_mib']:.0f} | {a['rss_after_vectors_mib']:.0f} | "
          f"{a['rss_after_solve_mib']:.0f} | {a['rss_after_vjp_mib']:.0f} | "
          f"{a['peak_rss_mib']:.0f} | {a['peak_rss_mib'] - a['rss_after_vectors_mib']:.0f} | "
          f"{a['solve_s']:.2f} s | {a['vjp_s']:.2f} s |")
    w("")
    w("For comparison (measured separately on this machine class): differentiating through CG by unrolling "
      "with torch autograd costs about 13 MB per iteration at n = 1e5 (7.8 GB at k = 600).")
    w("")

# ---- the other benchmarks, with plots (gnuplot) -------------------------
import shutil
import subprocess

plots = E["RB_PLOTS"]
os.makedirs(plots, exist_ok=True)
gnuplot = shutil.which("gnuplot")
plot_notes = []


def load_jsonl(name):
    path = os.path.join(out, name)
    if not os.path.exists(path):
        return []
    return [json.loads(l) for l in open(path) if l.strip().startswith("{")]


def load_json(name):
    path = os.path.join(out, name)
    try:
        return json.load(open(path))
    except (OSError, ValueError):
        return None


def gp_quote(t):
    return "'" + t.replace("'", "''") + "'"


def plot(name, script, series):
    """series: list of (datafile-name, rows); script uses the file names."""
    png = os.path.join(plots, name + ".png")
    if not gnuplot:
        plot_notes.append(f"{name}.png not drawn: gnuplot not found (make bench installs gnuplot-nox)")
        return None
    tmp = os.path.join(out, "plot_" + name)
    os.makedirs(tmp, exist_ok=True)
    for fname, rows in series:
        with open(os.path.join(tmp, fname), "w") as f:
            for r in rows:
                f.write(" ".join(str(v) for v in r) + "\n")
    head = ("if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {\n"
            "  set terminal pngcairo size 1500,480 font 'sans,10'\n} else {\n"
            "  set terminal png size 1500,480\n}\n"
            f"set output {gp_quote(png)}\ncd {gp_quote(tmp)}\nset grid\nset key outside right\n")
    r = subprocess.run([gnuplot], input=head + script, text=True, capture_output=True)
    if r.returncode != 0 or not os.path.exists(png):
        plot_notes.append(f"{name}.png: gnuplot failed: {r.stderr.strip()[:300]}")
        return None
    return "plots/" + name + ".png"


# residual against iteration
hist = load_jsonl("history.jsonl")
if hist:
    w("## Residual against iteration, every preconditioner")
    w("")
    w(f"`{rel(E['RB_CMD_HIST'])}`. The solver's own relative residual at every iteration "
      "(recursive; GMRES: the residual estimate of its least-squares problem); the last column "
      "is the true ||b - A x|| / ||b|| sla reports. diffusion2d: kappa = 1 + 0.5 sin(2 pi x) "
      "sin(2 pi y), SPD; convdiff2d: upwind, b = (10, 10), nonsymmetric.")
    w("")
    w("| problem | n | method | preconditioner | iterations | set-up s | solve s | true residual | reason |")
    w("|---|---|---|---|---|---|---|---|---|")
    for h in hist:
        w(f"| {h['problem']} | {h['n']} | {h['method']} | {h['precond']} | {h['iterations']} | "
          f"{h['setup_s']:.3g} | {h['solve_s']:.3g} | {h['residual']:.2e} | {h['reason']} |")
    w("")
    series, cmds = [], {}
    for i, h in enumerate(hist):
        fname = f"h{i}.dat"
        series.append((fname, [(a, max(b, 1e-300)) for a, b in h["history"]]))
        cmds.setdefault(h["problem"], []).append(
            f"{gp_quote(fname)} using 1:2 with lines lw 2 title {gp_quote(h['method'] + ' + ' + h['precond'])}")
    sc = "set multiplot layout 1,%d\nset logscale y\nset format y '10^{%%L}'\n" % len(cmds)
    sc += "set xlabel 'iteration'\nset ylabel 'relative residual'\n"
    for prob, c in cmds.items():
        sc += f"set title {gp_quote(prob)}\nplot " + ", ".join(c) + "\n"
    sc += "unset multiplot\n"
    img = plot("residual_history", sc, series)
    if img:
        w(f"![residual against iteration]({img})")
        w("")

# time to solution against size
direct = load_json("direct.json")
scipy_cg = {r["N"]: r for r in scipy} if scipy else {}
if direct and direct.get("sweep"):
    sweep = [r for r in direct["sweep"] if r.get("state") == "ok"]
    probs = []
    for r in sweep:
        if r["problem"] not in probs:
            probs.append(r["problem"])
    w("## Time to solution against size, every backend and SciPy")
    w("")
    w(f"`{rel(E['RB_CMD_DIRECT'])}`. Time to solution = `sla_solver_create` + one solve, b = ones, "
      "rtol 1e-8, medians; `auto` plans one solve (`auto_solves=1`). SciPy: `spsolve` "
      "(SuperLU) on 2D Poisson, and `cg` from the CG part above. The full analysis of these "
      "numbers (orderings, flop rates, the auto model) is in bench/DIRECT_RESULTS.md.")
    w("")
    series, panels = [], []
    for prob in probs:
        rows = [r for r in sweep if r["problem"] == prob]
        variants = []
        for r in rows:
            if r["variant"] not in variants:
                variants.append(r["variant"])
        ns = sorted({r["n"] for r in rows})
        w(f"**{prob}** (seconds; `*`: more than 25 % other load during the measurement)")
        w("")
        extra = []
        if prob == "poisson2d":
            sp_d = {x["n"]: x["scipy"] for x in direct.get("scipy_poisson2d", []) if x.get("scipy")}
            if sp_d:
                extra.append(("scipy spsolve", {n: v["spsolve_s"] for n, v in sp_d.items()}))
            if scipy_cg:
                extra.append(("scipy cg", {v["n"]: v["median_s"] for v in scipy_cg.values()}))
        w("| n | " + " | ".join(variants + [e[0] for e in extra]) + " | auto chose |")
        w("|---|" + "---|" * (len(variants) + len(extra) + 1))
        for n in ns:
            cells, chose = [], ""
            for v in variants:
                m = [r for r in rows if r["variant"] == v and r["n"] == n]
                if m:
                    star = "*" if m[0].get("other_load_pct", 0) > 25 else ""
                    cells.append(f"{m[0]['total_s']:.3g}{star}")
                    if v == "auto":
                        chose = m[0].get("method", "")
                else:
                    cells.append("-")
            for _, d in extra:
                cells.append(f"{d[n]:.3g}" if n in d else "-")
            w(f"| {n} | " + " | ".join(cells) + f" | {chose} |")
        w("")
        c = []
        for v in variants:
            fname = f"{prob}_{len(series)}.dat"
            pts = sorted((r["n"], r["total_s"]) for r in rows if r["variant"] == v)
            series.append((fname, pts))
            style = "linespoints lw 3 pt 7" if v == "auto" else "linespoints lw 1 pt 6"
            c.append(f"{gp_quote(fname)} using 1:2 with {style} title {gp_quote(v)}")
        for name, d in extra:
            fname = f"{prob}_{len(series)}.dat"
            series.append((fname, sorted(d.items())))
            c.append(f"{gp_quote(fname)} using 1:2 with linespoints dt 2 lw 2 pt 4 title {gp_quote(name)}")
        panels.append((prob, c))
    sc = "set multiplot layout 1,%d\nset logscale xy\nset format x '10^{%%L}'\n" % len(panels)
    sc += "set xlabel 'unknowns n'\nset ylabel 'seconds (create + solve)'\nset key top left font ',8'\n"
    for prob, c in panels:
        sc += f"set title {gp_quote(prob)}\nplot " + ", ".join(c) + "\n"
    sc += "unset multiplot\n"
    img = plot("time_vs_dof", sc, series)
    if img:
        w(f"![time to solution against size]({img})")
        w("")
    b = direct.get("batch") or {}
    if b.get("sla") and b.get("scipy"):
        scb = b["scipy"]
        w(f"**Batched solve + VJP**: {scb['count']} systems of 2D diffusion on one {scb['N']} x "
          f"{scb['N']} pattern (n = {scb['n']}). SciPy: a loop of `spsolve(A, b)` + "
          "`spsolve(A.T, gx)` + the gradient on the pattern.")
        w("")
        w("| what | threads | set-up s | solve s | VJP s | total s | SciPy loop / sla | other load |")
        w("|---|---|---|---|---|---|---|---|")
        for x in b["sla"]:
            w(f"| sla {x['method']} ({x['chose']}) | {x['threads']} | {x['create_s']:.3f} | "
              f"{x['solve_s']:.3f} | {x['vjp_s']:.3f} | {x['total_s']:.3f} | "
              f"{scb['loop_s'] / x['total_s']:.1f}x | {x['other_load_pct']:.0f} % |")
        w(f"| SciPy loop | 1 | - | {scb['solve_s']:.3f} | {scb['adjoint_s'] + scb['grad_s']:.3f} | "
          f"{scb['loop_s']:.3f} | 1.0x | {scb['other_load_pct']:.0f} % |")
        w("")

# AMG
amg = load_json("amg.json")
if isinstance(amg, dict):
    amg = amg.get("results") or amg.get("rows") or []
if amg:
    w("## AMG-preconditioned CG against CG + Jacobi and CHOLMOD")
    w("")
    w(f"`{rel(E['RB_CMD_AMG'])}`; rtol 1e-8, each (problem, method) in its own process. "
      "Analysis and tuning: bench/AMG_RESULTS.md.")
    w("")
    w("| problem | method | n | set-up s | solve s | total s | iterations | residual | bytes / DOF |")
    w("|---|---|---|---|---|---|---|---|---|")
    for r in amg:
        if r.get("status", "").startswith("SLA_ERR"):
            w(f"| {r['problem']} | {r['method']} | - | - | - | - | - | - | {r.get('message', '')[:80]} |")
            continue
        w(f"| {r['problem']} | {r['method']} | {r['n']} | {r['setup_s']:.3g} | {r['solve_s']:.3g} | "
          f"{r['total_s']:.3g} | {r['iterations']} | {r['residual']:.2e} | {r['bytes_per_dof']:.0f} |")
    w("")

# AMG over 2 MPI ranks
damg = load_json("dist_amg.json")
if isinstance(damg, list) and damg:
    w("## AMG-preconditioned CG over 2 MPI ranks against the single-process solver")
    w("")
    w(f"`{rel(E['RB_CMD_DISTAMG'])}` (one thread per rank, OpenMPI with yield_when_idle). One BoomerAMG "
      "hierarchy over both ranks (`sla_dist_solver`, precond amg); the serial row is `sla_solver` on "
      f"rank 0 in the same run. rtol 1e-8, b = ones, medians of {damg[0].get('reps', 1)}, set-up + solve "
      "(the matrix scatter is not timed). The other-load column counts the other rank too (about 50 % "
      "of the machine while both ranks compute).")
    w("")
    w("| problem | ranks | solver | n | set-up s | solve s | total s | iterations | residual | other load |")
    w("|---|---|---|---|---|---|---|---|---|---|")
    for r in damg:
        w(f"| {r['problem']} | {r['ranks']} | {r['solver']} | {r['n']} | {r['setup_s']:.3f} | "
          f"{r['solve_s']:.3f} | {r['total_s']:.3f} | {r['iterations']} | {r['residual']:.2e} | "
          f"{r['other_load_pct']:.0f} % |")
    w("")

# least squares: LSQR / LSMR at a fixed iteration count against SciPy, and QR
lsq = load_json("lsq.json")
if isinstance(lsq, dict) and lsq.get("fixed"):
    pb = lsq["problem"]
    w(f"## Least squares: LSQR and LSMR against SciPy, {lsq['iters']} iterations, "
      f"{pb['m']} x {pb['n']}")
    w("")
    w(f"`{rel(E['RB_CMD_LSQ'])}`. Short-ray tomography (bench/bench_tomo.h): {pb['m']} rays of "
      f"length {pb['seg']:g} pixels through a {pb['grid']} x {pb['grid']} grid, nnz {pb['nnz']}, "
      f"b = A x_phantom + {100 * pb['noise']:g} % noise. Both sides run exactly {lsq['iters']} "
      "iterations (atol = btol = conlim = 0) on the same A and b (SciPy reads sla's CSR arrays; "
      "int32 indices); sla's time includes its final true-residual products. Runs alternate "
      f"(sla, SciPy, ...), medians of {lsq['reps']}; SciPy " + lsq.get("scipy_version", "?") +
      f" single-threaded sparse products. `*`: a repetition kept with more than "
      f"{lsq['quiet_pct']:g} % other load after {lsq['retries']} retr{'y' if lsq['retries'] == 1 else 'ies'}.")
    w("")
    w("| method | solver | threads | iterations | median s | ms / iteration | SciPy / sla | "
      "\\|\\|b - A x\\|\\| | rel. diff to SciPy | x rel. diff to SciPy | other load |")
    w("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in lsq["fixed"]:
        if r.get("failed"):
            w(f"| {r['method']} | {r['solver']} | {r['threads']} | failed: {r.get('why', '')[:100]} |")
            continue
        sc = r.get("scipy_over_sla")
        w(f"| {r['method']} | {r['solver']} | {r['threads']} | {r['iterations']} | {r['median_s']:.3f} | "
          f"{r['ms_per_iteration']:.2f} | {f'{sc:.2f}x' if sc else '-'} | {r['true_rnorm']:.10e} | "
          f"{r['rnorm_rel_diff']:.1e} | {r['x_rel_diff']:.1e} | " if sc else
          f"| {r['method']} | {r['solver']} | {r['threads']} | {r['iterations']} | {r['median_s']:.3f} | "
          f"{r['ms_per_iteration']:.2f} | - | {r['true_rnorm']:.10e} | - | - | ")
        L[-1] += f"{r['max_other_load_pct']:.0f} %{'*' if r['disturbed'] else ''} |"
    w("")
    bad = [r for r in lsq["fixed"] if "rnorm_agree_1e-8" in r and not r["rnorm_agree_1e-8"]]
    w("Same \\|\\|b - A x\\|\\| as SciPy to 1e-8: " + ("**no** (" + ", ".join(
        f"{r['method']} {r['threads']}T" for r in bad) + ")" if bad else "yes") + ".")
    w("")
    q = lsq.get("qr")
    if q:
        w(f"**Exact least squares at {q['m']} x {q['n']}** (nnz {q['nnz']}): sla `method=qr` "
          f"(SuiteSparseQR) against LSQR run to atol = btol = {q['tol']:g}.")
        w("")
        w("| method | solver | threads | iterations | s | \\|\\|b - A x\\|\\| | rel. diff to qr | "
          "x rel. diff to qr | other load |")
        w("|---|---|---|---|---|---|---|---|---|")
        for r in q["runs"]:
            if r.get("failed"):
                w(f"| {r['method']} | {r['solver']} | {r['threads']} | failed: {r.get('why', '')[:100]} |")
                continue
            w(f"| {r['method']} | {r['solver']} | {r['threads']} | {r['iterations']} | {r['median_s']:.3f} | "
              f"{r['true_rnorm']:.10e} | {r.get('rnorm_rel_diff_qr', 0):.1e} | {r.get('x_rel_diff_qr', 0):.1e} | "
              f"{r['max_other_load_pct']:.0f} %{'*' if r['disturbed'] else ''} |")
        w("")

# svds: the k largest singular triplets against SciPy
svds = load_json("svds.json")
if isinstance(svds, dict) and svds.get("runs"):
    pb = svds["problem"]
    w(f"## svds: the {svds['k']} largest singular triplets against SciPy, {pb['m']} x {pb['n']}")
    w("")
    w(f"`{rel(E['RB_CMD_SVDS'])}`. Short-ray tomography ({pb['grid']} x {pb['grid']} grid, nnz "
      f"{pb['nnz']}). Both run ARPACK on A^T A from the same start vector, tol {svds['tol']:g} "
      "(0: machine precision), ncv = 2k + 1 or 20; SciPy " + svds.get("scipy_version", "?") +
      f" `svds(solver='arpack')`. Runs alternate, medians of {svds['reps']}. Singular values "
      "agree to 1e-8: " + {True: "yes", False: "**no**", None: "(SciPy not run)"}[svds.get("agree_1e-8")] + ".")
    w("")
    w("| solver | threads | median s | SciPy / sla | restarts | products | s_max | "
      "max rel. diff of s | max \\|\\|A v - s u\\|\\| | max \\|\\|A^T u - s v\\|\\| | other load |")
    w("|---|---|---|---|---|---|---|---|---|---|---|")
    sp_run = next((r for r in svds["runs"] if r["solver"] == "scipy" and not r.get("failed")), None)
    for r in svds["runs"]:
        if r.get("failed"):
            w(f"| {r['solver']} | {r['threads']} | failed: {r.get('why', '')[:100]} |")
            continue
        is_sla = r["solver"] == "sla"
        ratio = f"{sp_run['median_s'] / r['median_s']:.2f}x" if sp_run and is_sla else "-"
        sdiff = f"{r['s_max_rel_diff']:.1e}" if sp_run and is_sla else "-"
        w(f"| {r['solver']} | {r['threads']} | {r['median_s']:.3f} | {ratio} | "
          f"{r['restarts'] if is_sla else '-'} | {r['operator_applications'] if is_sla else '-'} | "
          f"{r['s'][0]:.12g} | {sdiff} | {r['max_residual_v']:.2e} | "
          f"{r['max_residual_u']:.2e} | {r['max_other_load_pct']:.0f} %{'*' if r['disturbed'] else ''} |")
    w("")

# adjoint memory: sla vs unrolled torch
sla_small = load_jsonl("adjoint_sla_small.jsonl")
torch_rows = load_jsonl("adjoint_torch.jsonl")
if sla_small:
    n0 = sla_small[0]["n"]
    w(f"## Adjoint memory against iteration count: sla vs unrolled CG in PyTorch (n = {n0})")
    w("")
    w(f"`{rel(E['RB_CMD_TORCH'])}`. Both run exactly k CG iterations on 2D Poisson "
      "(b = ones, x0 = 0) and differentiate L = sum(x) with respect to b and the matrix values. "
      "sla: solve + `sla_solver_solve_vjp` (one adjoint solve); torch: the k iterations written "
      "with torch operations, then `backward()`, which keeps every iteration's intermediates. "
      "Peak RSS of each process (MiB).")
    w("")
    tk = {r["k"]: r for r in torch_rows}
    w("| k | sla peak RSS | sla solve + VJP s | torch peak RSS | torch forward + backward s | torch / sla memory |")
    w("|---|---|---|---|---|---|")
    for a in sla_small:
        t = tk.get(a["k"])
        tcell = (f"{t['peak_rss_mib']:.0f} | {t['forward_s'] + t['backward_s']:.2f} | "
                 f"{t['peak_rss_mib'] / a['peak_rss_mib']:.0f}x") if t else "- | - | -"
        w(f"| {a['k']} | {a['peak_rss_mib']:.0f} | {a['solve_s'] + a['vjp_s']:.2f} | {tcell} |")
    w("")
    if torch_rows and len(torch_rows) > 1:
        t0, t1 = torch_rows[0], torch_rows[-1]
        slope = (t1["peak_rss_mib"] - t0["peak_rss_mib"]) / max(1, t1["k"] - t0["k"])
        w(f"torch grows by {slope:.1f} MiB per iteration; sla stays flat "
          f"({min(a['peak_rss_mib'] for a in sla_small):.0f}-{max(a['peak_rss_mib'] for a in sla_small):.0f} MiB). "
          "The torch process also holds the torch runtime itself (its RSS before the solve: "
          f"{t0['rss_before_mib']:.0f} MiB).")
        w("")
    series = [("sla.dat", [(a["k"], a["peak_rss_mib"]) for a in sla_small])]
    c = ["'sla.dat' using 1:2 with linespoints lw 3 pt 7 title 'sla: solve + VJP (adjoint solve)'"]
    if torch_rows:
        series.append(("torch.dat", [(t["k"], t["peak_rss_mib"]) for t in torch_rows]))
        c.append("'torch.dat' using 1:2 with linespoints lw 2 pt 5 title 'PyTorch: unrolled CG + backward'")
    sc = ("set xlabel 'CG iterations k'\nset ylabel 'peak RSS (MiB)'\nset key top left\n"
          f"set title 'adjoint memory, 2D Poisson n = {n0}'\nplot " + ", ".join(c) + "\n")
    img = plot("adjoint_memory", sc, series)
    if img:
        w(f"![adjoint memory against iteration count]({img})")
        w("")

# sla against PETSc (bench/anchors/run_anchors.sh wrote the section)
if os.path.exists(os.path.join(out, "anchors.md")):
    L.extend(open(os.path.join(out, "anchors.md")).read().rstrip("\n").split("\n"))
    w("")
# Sections this run did not generate (the tables of parts not run, and the
# hand-kept issue tables: Helmholtz, least squares, SpGEMM, ...) are carried
# over from the report being replaced, in their old order, so that running
# one part never deletes another part's results.
def sections(lines):
    secs, cur = [], None
    for ln in lines:
        if ln.startswith("## "):
            cur = [ln]
            secs.append(cur)
        elif cur is not None:
            cur.append(ln)
    return secs
made = {ln for ln in L if ln.startswith("## ")}
kept = []
if os.path.exists(sys.argv[1]):
    old_lines = open(sys.argv[1]).read().split("\n")
    for sec in sections(old_lines):
        if sec[0] in made or sec[0] == "## More results":
            continue
        while sec and sec[-1] == "":
            sec.pop()
        kept.extend(sec + [""])
if kept:
    L.extend(kept)

others = [("DIRECT_RESULTS.md", "direct solvers, crossover sweep, auto dispatch, batches"),
          ("AMG_RESULTS.md", "AMG tuning and the largest problem"),
          ("EIG_RESULTS.md", "eigsh and logdet with gradients"),
          ("NL_RESULTS.md", "nonlinear solve with implicit gradients"),
          ("DIST_RESULTS.md", "the MPI layer"),
          ("RELIABILITY.md", "fuzzing, failure injection, concurrency")]
have = [(f, d) for f, d in others if os.path.exists(os.path.join(os.path.dirname(out), f))]
if have:
    w("## More results")
    w("")
    for f, d in have:
        w(f"- [{f}]({f}): {d}")
    w("")
if plot_notes:
    w("Plot notes: " + "; ".join(plot_notes))
    w("")

if unpublished:
    sys.stderr.write("run_all.sh: not published (more than %.0f %% other load): %s\n"
                     % (MAX_LOAD, "; ".join(unpublished)))
open(sys.argv[1], "w").write("\n".join(L) + "\n")
if unpublished:
    sys.exit(3)
PYEOF
echo "run_all.sh: wrote $results (${t_total} s)" >&2
