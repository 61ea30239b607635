#!/usr/bin/env bash
# Install the Debian packages sla needs, if any is missing. Idempotent and
# quick when everything is present. Runs apt-get as root (or through sudo).
set -euo pipefail

PKGS="build-essential cmake pkg-config libopenblas-dev liblapacke-dev libsuitesparse-dev libsuperlu-dev libmumps-seq-dev libmetis-dev libhypre-dev libopenmpi-dev openmpi-bin libarpack2-dev"
# Fuzzing (make fuzz, the smoke pass of make test): clang with libFuzzer,
# and LLVM's OpenMP for the clang build of the library.
PKGS="$PKGS clang-14 libclang-rt-14-dev libomp-14-dev"
# Benchmarks compare against SciPy with Debian's interpreter.
if [ "${SLA_DEPS_BENCH:-0}" = 1 ]; then
  PKGS="$PKGS python3-numpy python3-scipy gnuplot-nox"
  # The anchor comparison (run_all.sh part anchors): PETSc (CG + GAMG, CG +
  # hypre), built with cmake -DSLA_BENCH_PETSC=ON; never needed by the tests.
  PKGS="$PKGS petsc-dev"
fi

# The PyTorch binding (python/) and its tests use Debian's /usr/bin/python3
# with python3-torch (about 180 packages, ~50 MB to download, ~1 min).
PKGS="$PKGS python3-torch python3-numpy python3-scipy"
# sla.DSparseTensor (python/sla/_dist.py) and its MPI tests: mpi4py, built by
# Debian against the same OpenMPI as libopenmpi-dev.
PKGS="$PKGS python3-mpi4py"
# SparseTensor.spy and sla.plot_history (imported lazily; tests use Agg).
PKGS="$PKGS python3-matplotlib"
# `pip install ./python` offline (--no-build-isolation) and its test
# (tests/test_pip_install.sh): venv, pip, setuptools and wheel.
PKGS="$PKGS python3-venv python3-pip python3-setuptools python3-wheel"

missing=""
for p in $PKGS; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing="$missing $p"
  fi
done
[ -z "$missing" ] && exit 0

echo "sla: installing missing Debian packages:$missing"
SUDO=""
if [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null; then SUDO="sudo"; else
    echo "sla: need root (or sudo) to install:$missing" >&2; exit 1; fi
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq || $SUDO apt-get update
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $missing
