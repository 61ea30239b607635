#!/usr/bin/env bash
# sla.DSparseTensor (python/sla/_dist.py) under MPI: python/tests/mpi/
# test_dsparse.py on NP ranks through mpiexec, on Debian's /usr/bin/python3
# with mpi4py, against the libsla of this build.
# usage: test_python_mpi.sh SOURCE_DIR LIBSLA_SO MPIEXEC NP [plain|asan]
# Exit 77 (ctest: skipped) when the interpreter, torch/numpy/scipy or mpi4py
# is missing (scripts/install-deps.sh installs them: python3-mpi4py), and in
# the sanitizer build: the sanitized libsla needs the ASan runtime preloaded
# into every rank's interpreter, not done here (the C distributed layer runs
# under ASan in test_dist_np*, the binding in test_python).
set -u
src=$1
lib=$2
mpiexec=$3
np=$4
mode=${5:-plain}
if [ "$mode" = asan ]; then
  echo "test_python_mpi: SKIPPED in the sanitizer build (see the header of this script)"; exit 77
fi
py=/usr/bin/python3
if [ ! -x "$py" ] || ! "$py" -c "import torch, numpy, scipy" >/dev/null 2>&1; then
  echo "test_python_mpi: SKIPPED: $py with torch, numpy and scipy is not installed"; exit 77
fi
if ! "$py" -c "import mpi4py" >/dev/null 2>&1; then
  echo "test_python_mpi: SKIPPED: mpi4py is not installed (apt-get install python3-mpi4py;" \
       "scripts/install-deps.sh installs it)"
  exit 77
fi
export PYTHONPATH="$src/python" SLA_LIBRARY="$lib"
exec "$mpiexec" --oversubscribe -n "$np" "$py" "$src/python/tests/mpi/test_dsparse.py"
