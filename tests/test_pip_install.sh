#!/usr/bin/env bash
# A real pip install of the Python package: a venv of Debian's python3
# (--system-site-packages, for torch, numpy, setuptools and wheel), `pip
# install --no-build-isolation --no-index` of a copy of python/ (the build
# runs CMake on this source tree and puts libsla.so inside the package),
# then, from another directory and without PYTHONPATH or SLA_LIBRARY, a
# solve and its backward pass checked against dense torch, and the
# package's version against the C library's.
#   bash test_pip_install.sh <source-dir>
# Exit 77 (ctest: skipped) when python3-venv, pip, setuptools, wheel or
# torch is missing (scripts/install-deps.sh installs them).
set -u
src=${1:?usage: test_pip_install.sh <source-dir>}
py=/usr/bin/python3
skip() { echo "test_pip_install: SKIPPED: $*"; exit 77; }
[ -x "$py" ] || skip "$py is not installed"
"$py" -c "import ensurepip, venv" >/dev/null 2>&1 || skip "python3-venv is not installed"
"$py" -m pip --version >/dev/null 2>&1 || skip "python3-pip is not installed"
"$py" -c "import setuptools, wheel" >/dev/null 2>&1 || skip "python3-setuptools / python3-wheel missing"
"$py" -c "import torch, numpy" >/dev/null 2>&1 || skip "python3-torch / python3-numpy missing"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/sla-pip.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
unset PYTHONPATH SLA_LIBRARY PIP_REQUIRE_VIRTUALENV
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-2}

"$py" -m venv --system-site-packages "$tmp/venv" || skip "python3 -m venv failed (python3-venv)"
[ -x "$tmp/venv/bin/pip" ] || skip "the venv has no pip (python3-venv / python3-pip)"
# a copy of python/ (the build writes build/ and *.egg-info next to
# setup.py; the source tree stays clean), built from this source tree
cp -r "$src/python" "$tmp/pkg" && rm -rf "$tmp/pkg/tests" "$tmp/pkg/build"
if ! SLA_SOURCE_DIR="$src" "$tmp/venv/bin/pip" install --no-build-isolation --no-index \
        "$tmp/pkg" >"$tmp/pip.log" 2>&1; then
  echo "FAIL: pip install"; tail -60 "$tmp/pip.log"; exit 1
fi
echo "ok: pip install"

mkdir "$tmp/elsewhere" && cd "$tmp/elsewhere" || exit 1
cat >example.py <<'PY'
import os, re, sys
import torch
import sla

where = os.path.dirname(sla.__file__)
assert "site-packages" in where, where
assert sla.library_path == os.path.join(where, "lib", "libsla.so"), sla.library_path
with open(os.path.join(sys.argv[1], "CMakeLists.txt")) as f:
    want = re.search(r"project\(\s*sla\s+VERSION\s+([0-9.]+)", f.read()).group(1)
from importlib.metadata import version
assert version("sla") == want, (version("sla"), want)
assert sla.version().startswith(want), (sla.version(), want)

A = sla.SparseTensor.poisson(2, 8)
vals = A.values.clone().requires_grad_(True)
A = A.with_values(vals)
b = torch.linspace(1.0, 2.0, 64, dtype=torch.float64, requires_grad=True)
x = A.solve(b)
x.square().sum().backward()
D = A.detach().to_dense().clone().requires_grad_(True)
b2 = b.detach().clone().requires_grad_(True)
xd = torch.linalg.solve(D, b2)
xd.square().sum().backward()
gv = D.grad[A.row, A.col]
assert torch.allclose(x, xd, rtol=1e-8, atol=1e-10), (x - xd).abs().max()
assert torch.allclose(b.grad, b2.grad, rtol=1e-7, atol=1e-10)
assert torch.allclose(vals.grad, gv, rtol=1e-7, atol=1e-10)
print("example ok:", where, sla.version())
PY
if ! "$tmp/venv/bin/python" example.py "$src"; then
  echo "FAIL: the example with the installed package"; exit 1
fi
echo "test_pip_install: passed"
