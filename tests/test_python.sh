#!/usr/bin/env bash
# The PyTorch binding's tests (python/tests/test_*.py, unittest) on Debian's
# /usr/bin/python3, against the libsla of this build.
# usage: test_python.sh SOURCE_DIR LIBSLA_SO [plain|asan]
# Exit 77 (ctest: skipped) when the interpreter or torch/numpy/scipy is
# missing; scripts/install-deps.sh installs them.
set -u
src=$1
lib=$2
mode=${3:-plain}
py=/usr/bin/python3
if [ ! -x "$py" ] || ! "$py" -c "import torch, numpy, scipy" >/dev/null 2>&1; then
  echo "test_python: SKIPPED: $py with torch, numpy and scipy is not installed" \
       "(scripts/install-deps.sh installs python3-torch python3-numpy python3-scipy)"
  exit 77
fi
export PYTHONPATH="$src/python" SLA_LIBRARY="$lib" OMP_NUM_THREADS=2
if [ "$mode" = asan ]; then
  # The sanitized libsla needs the ASan runtime first in the process: preload
  # it into the interpreter. Leak checking is off (CPython and torch keep
  # their allocations at exit); everything else (heap overflows,
  # use-after-free, UBSan) stays fatal.
  asan=$(gcc -print-file-name=libasan.so)
  ubsan=$(gcc -print-file-name=libubsan.so)
  if [ ! -e "$asan" ] || [ ! -e "$ubsan" ]; then
    echo "test_python: SKIPPED under ASan: libasan.so / libubsan.so not found"; exit 77
  fi
  export LD_PRELOAD="$asan $ubsan"
  export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:alloc_dealloc_mismatch=0:new_delete_type_mismatch=0:detect_odr_violation=0
  export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
fi
exec "$py" -m unittest discover -s "$src/python/tests" -v
