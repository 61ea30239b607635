#!/usr/bin/env bash
# The anchor comparison (issue 22): sla against PETSc (CG + GAMG, CG + hypre
# BoomerAMG; 1 and 2 MPI ranks) on the same generated matrices, the runs
# interleaved (every configuration once, then every configuration again:
# ABAB), one process per run. Then bench/anchors/report_anchors.py writes
# the medians and ratios (bench/out/anchors.json, anchors.md) and the plot.
#
#   bash bench/anchors/run_anchors.sh BUILD_DIR OUT_DIR PLOTS_DIR
#
# BUILD_DIR holds bin/sla_bench_anchor and bin/sla_bench_petsc (configure
# with -DSLA_BENCH_PETSC=ON; `make bench` does when pkg-config finds PETSc).
# Settings (environment):
#   SLA_BENCH_ANCHOR_PROBLEMS  problem:N list (default p2d:1000,p2d:2000,p3d:100,diff:1000;
#                              diff is the training step: --steps refreshes + solves)
#   SLA_BENCH_ANCHOR_REPS      interleaved rounds, medians over them (default 3)
#   SLA_BENCH_ANCHOR_STEPS     training steps per diff run, medians (default 3)
#   SLA_BENCH_ANCHOR_CHANGE    kappa change per step (default 0.01: <= 1 %)
#   SLA_BENCH_ANCHOR_WARM      1 (default): diff also runs warm-started steps (each solve from the
#                              previous x) for sla saamg and PETSc GAMG/hypre, as separate rows
#   SLA_BENCH_ANCHOR_THETA     e.g. 0.01: diff also runs sla saamg with that fine-level strength
#                              threshold (saamg_theta; a tuned setting, rows "cg+saamg(theta=...)")
# diff runs also time the adjoint solve of each step (--adjoint 1), and run the steps with the
# whole preconditioner kept on both sides (sla saamg_reuse=hierarchy, PETSc's
# KSPSetReusePreconditioner with GAMG and hypre; 2 threads / 2 ranks).
#   SLA_BENCH_QUICK=1          small sizes (p2d:100,p2d:316,p3d:20,diff:100), 2 rounds
#   SLA_BENCH_WAIT             seconds to wait for a quiet machine before each round (default 30)
set -euo pipefail

build=${1:?usage: run_anchors.sh BUILD_DIR OUT_DIR PLOTS_DIR}
out=${2:?usage: run_anchors.sh BUILD_DIR OUT_DIR PLOTS_DIR}
plots=${3:?usage: run_anchors.sh BUILD_DIR OUT_DIR PLOTS_DIR}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
sla=$build/bin/sla_bench_anchor
petsc=$build/bin/sla_bench_petsc
if [ "${SLA_BENCH_QUICK:-0}" = 1 ]; then d_probs=p2d:100,p2d:316,p3d:20,diff:100; d_reps=2
else d_probs=p2d:1000,p2d:2000,p3d:100,diff:1000; d_reps=3; fi
probs=${SLA_BENCH_ANCHOR_PROBLEMS:-$d_probs}
reps=${SLA_BENCH_ANCHOR_REPS:-$d_reps}
steps=${SLA_BENCH_ANCHOR_STEPS:-3}
change=${SLA_BENCH_ANCHOR_CHANGE:-0.01}
wait_s=${SLA_BENCH_WAIT:-30}

for b in "$sla" "$petsc"; do
  if [ ! -x "$b" ]; then
    echo "run_anchors.sh: $b not found (cmake -DSLA_BENCH_PETSC=ON; petsc-dev)" >&2
    exit 1
  fi
done
command -v mpiexec >/dev/null || { echo "run_anchors.sh: mpiexec not found" >&2; exit 1; }
mkdir -p "$out" "$plots"
raw=$out/anchors_runs.jsonl
: > "$raw"

# OpenMPI as the tests run it (root allowed, shared memory, idle ranks yield)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader \
  OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_mpi_yield_when_idle=1 \
  OMPI_MCA_rmaps_base_oversubscribe=1

. "$here/../load.sh"   # busy_pct

wait_quiet() {
  local waited=0 load
  while :; do
    load=$(busy_pct)
    if [ "$load" -le 10 ] || [ "$waited" -ge "$wait_s" ]; then break; fi
    sleep 4; waited=$(( waited + 5 ))
  done
}

# One run: label, then the command; its JSON line goes to $raw.
one() {
  local label=$1; shift
  local line
  if line=$(timeout 900 "$@" 2>"$out/anchors_last.err" | grep '^{' | tail -1) && [ -n "$line" ]; then
    echo "$line" >> "$raw"
  else
    echo "run_anchors.sh: $label failed: $(tail -3 "$out/anchors_last.err" | tr '\n' ' ')" >&2
  fi
}

IFS=, read -ra plist <<< "$probs"
for pn in "${plist[@]}"; do
  p=${pn%%:*}; N=${pn##*:}
  a=(--problem "$p" --N "$N")
  [ "$p" = diff ] && a+=(--steps "$steps" --change "$change" --adjoint 1)
  echo "== anchors: $p N = $N ($reps interleaved rounds) ==" >&2
  for ((r = 1; r <= reps; r++)); do
    wait_quiet
    one "sla saamg 1t" env OMP_NUM_THREADS=1 "$sla" "${a[@]}" --precond saamg --threads 1
    one "petsc gamg 1r" env OMP_NUM_THREADS=1 mpiexec -n 1 "$petsc" "${a[@]}" --pc gamg
    one "sla saamg 2t" env OMP_NUM_THREADS=2 "$sla" "${a[@]}" --precond saamg --threads 2
    one "petsc gamg 2r" env OMP_NUM_THREADS=1 mpiexec -n 2 "$petsc" "${a[@]}" --pc gamg
    one "sla amg 1t" env OMP_NUM_THREADS=1 "$sla" "${a[@]}" --precond amg --threads 1
    one "petsc hypre 1r" env OMP_NUM_THREADS=1 mpiexec -n 1 "$petsc" "${a[@]}" --pc hypre
    if [ "$p" != diff ]; then
      one "sla amg 2r" env OMP_NUM_THREADS=1 mpiexec -n 2 "$sla" "${a[@]}" --precond amg --threads 1
    fi
    one "petsc hypre 2r" env OMP_NUM_THREADS=1 mpiexec -n 2 "$petsc" "${a[@]}" --pc hypre
    if [ "$p" = diff ]; then # the whole preconditioner kept across steps, on both sides
      one "sla saamg 2t hierarchy" env OMP_NUM_THREADS=2 "$sla" "${a[@]}" --precond saamg --threads 2 \
        --reuse hierarchy
      one "petsc gamg 2r keep-pc" env OMP_NUM_THREADS=1 mpiexec -n 2 "$petsc" "${a[@]}" --pc gamg --keep-pc 1
      one "petsc hypre 2r keep-pc" env OMP_NUM_THREADS=1 mpiexec -n 2 "$petsc" "${a[@]}" --pc hypre --keep-pc 1
    fi
    if [ "$p" = diff ] && [ -n "${SLA_BENCH_ANCHOR_THETA:-}" ]; then
      t=(--saamg-theta "$SLA_BENCH_ANCHOR_THETA")
      one "sla saamg 1t theta" env OMP_NUM_THREADS=1 "$sla" "${a[@]}" "${t[@]}" --precond saamg --threads 1
      one "sla saamg 2t theta" env OMP_NUM_THREADS=2 "$sla" "${a[@]}" "${t[@]}" --precond saamg --threads 2
    fi
    if [ "$p" = diff ] && [ "${SLA_BENCH_ANCHOR_WARM:-1}" = 1 ]; then
      w=("${a[@]}" --start warm)
      one "sla saamg 1t warm" env OMP_NUM_THREADS=1 "$sla" "${w[@]}" --precond saamg --threads 1
      one "petsc gamg 1r warm" env OMP_NUM_THREADS=1 mpiexec -n 1 "$petsc" "${w[@]}" --pc gamg
      one "sla saamg 2t warm" env OMP_NUM_THREADS=2 "$sla" "${w[@]}" --precond saamg --threads 2
      one "petsc gamg 2r warm" env OMP_NUM_THREADS=1 mpiexec -n 2 "$petsc" "${w[@]}" --pc gamg
      one "petsc hypre 2r warm" env OMP_NUM_THREADS=1 mpiexec -n 2 "$petsc" "${w[@]}" --pc hypre
    fi
  done
done
/usr/bin/python3 "$here/report_anchors.py" "$raw" "$out" "$plots"
