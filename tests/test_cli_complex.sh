#!/usr/bin/env bash
# End-to-end tests of complex Matrix Market files through the command-line
# tool: gen helmholtz2d, info, solve (forward, --out, --rhs, --adjoint
# gradients), logdet (sign, log|det|, --grad-A), eigsh on a Hermitian file,
# and the refusals (commands without a complex path, a bad hermitian file).
#   bash test_cli_complex.sh <path-to-sla> <test-data-dir>
# References are independent: dense LAPACK through NumPy (/usr/bin/python3)
# and central finite differences of the dense solve for the gradients.
set -u

SLA=${1:?usage: test_cli_complex.sh <path-to-sla> <test-data-dir>}
DATA=${2:?usage: test_cli_complex.sh <path-to-sla> <test-data-dir>}
. "$(dirname "$0")/cli_lib.sh"
cli_init sla-cli-complex
PY=/usr/bin/python3
if ! $PY -c 'import numpy, scipy.io' 2>/dev/null; then
    echo "test_cli_complex: skipped (needs /usr/bin/python3 with numpy and scipy)"
    exit 0
fi

# pycheck DESCRIPTION SCRIPT ARGS...: run a Python check; its stdout (the
# reason) is shown when it fails (exit status not 0).
pycheck() {
    local what=$1 script=$2
    shift 2
    local msg
    if msg=$($PY -c "$script" "$@" 2>&1); then ok; else fail "$what: $msg"; fi
}

# The Python helpers every check shares: mm(path) reads any Matrix Market
# file as a dense complex array, js() the last run's JSON.
PYLIB='
import json, sys
import numpy as np
import scipy.io
def mm(p):
    a = scipy.io.mmread(p)
    return np.asarray(a.todense() if hasattr(a, "todense") else a, dtype=complex)
def js():
    return json.load(open(sys.argv[1]))
def pattern(p):
    c = scipy.io.mmread(p).tocoo()
    return c.row, c.col, np.asarray(c.data, dtype=complex)
def check(cond, msg):
    if not cond:
        print(msg); sys.exit(1)
'

H=$tmp/H.mtx
Q=$DATA/qc324.mtx

# ---- gen helmholtz2d -------------------------------------------------------
run gen helmholtz2d 20 --k 12 --alpha 0.5 -o "$H"; expect 0 "gen helmholtz2d"
if head -n 1 "$H" | grep -q "coordinate complex"; then ok; else fail "gen helmholtz2d: header $(head -n 1 "$H")"; fi
run gen helmholtz2d 20 -o "$tmp/h2.mtx"; expect 2 "gen helmholtz2d without --k"; stderr_has "needs --k" "gen helmholtz2d without --k"
run gen poisson2d 5 --k 3 -o "$tmp/p.mtx"; expect 2 "gen poisson2d --k"; stderr_has "helmholtz2d only" "gen poisson2d --k"
run gen helmholtz2d 4 --k -1 -o "$tmp/h3.mtx"; expect 2 "gen helmholtz2d --k -1"
# the generator against its formula: 4 - (k h)^2 (1 + i alpha) on the diagonal, -1 off it
pycheck "helmholtz2d values" "$PYLIB
A = mm(sys.argv[2]); h = 1 / 21.0
check(A.shape == (400, 400), 'shape %s' % (A.shape,))
check(np.allclose(np.diag(A), 4 - (12 * h) ** 2 * (1 + 0.5j), rtol=0, atol=1e-14), 'diagonal %s' % np.diag(A)[:2])
check(abs(A[0, 1] + 1) < 1e-15 and abs(A[0, 20] + 1) < 1e-15 and A[19, 20] == 0, 'off-diagonal')
check(np.allclose(A, A.T), 'not complex symmetric')" /dev/null "$H"

# ---- info --------------------------------------------------------------------
run info "$H" --json; expect 0 "info helmholtz"; one_json_object "info helmholtz"
jeq dtype complex128 "info helmholtz"; jeq symmetric true "info helmholtz"; jeq hermitian false "info helmholtz"
run info "$H"; expect 0 "info helmholtz text"; stdout_has "complex symmetric +yes" "info text"; stdout_has "hermitian +no" "info text"
run info "$H" --cond; expect 2 "info --cond complex"; stderr_has "complex" "info --cond complex"
run info "$DATA/bcsstk01.mtx" --json; expect 0 "info real"; jeq dtype float64 "info real"; jeq hermitian true "info real"

# ---- solve: Helmholtz ---------------------------------------------------------
run solve "$H" --json; expect 0 "solve helmholtz auto"; one_json_object "solve helmholtz auto"
jeq dtype complex128 "solve helmholtz auto"; jeq converged true "solve helmholtz auto"
pycheck "solve helmholtz auto residual" "$PYLIB
r = js(); check(r['residual'] is not None and r['residual'] < 1e-7, 'residual %s' % r['residual'])" "$OUT"
for m in gmres bicgstab lu; do
    run solve "$H" --method $m --precond ilu0 --rtol 1e-10 --json --out "$tmp/xh_$m.mtx"
    expect 0 "solve helmholtz $m"; jeq converged true "solve helmholtz $m"; jeq method $m "solve helmholtz $m"
    # b = A 1, so x = 1
    pycheck "solve helmholtz $m: x = 1" "$PYLIB
x = mm(sys.argv[2]); check(np.abs(x - 1).max() < 1e-7, 'max |x - 1| = %g' % np.abs(x - 1).max())" /dev/null "$tmp/xh_$m.mtx"
done
if head -n 1 "$tmp/xh_lu.mtx" | grep -q "array complex"; then ok; else fail "solve --out header: $(head -n 1 "$tmp/xh_lu.mtx")"; fi
# cg needs a Hermitian matrix: refused naming the method, nothing else written
run solve "$H" --method cg --json; expect 2 "solve helmholtz cg"; stderr_has "cg" "solve helmholtz cg"

# ---- solve: qc324 against a dense solve --------------------------------------
# a complex right-hand side (two columns) written by NumPy
$PY -c "$PYLIB
n = 324; rng = np.random.default_rng(5)
B = rng.standard_normal((n, 2)) + 1j * rng.standard_normal((n, 2))
W = rng.standard_normal((n, 1)) + 1j * rng.standard_normal((n, 1))
scipy.io.mmwrite(sys.argv[2], B); scipy.io.mmwrite(sys.argv[3], W)" /dev/null "$tmp/b.mtx" "$tmp/w.mtx"
run solve "$Q" --method lu --rhs "$tmp/b.mtx" --out "$tmp/xq.mtx" --adjoint "$tmp/w.mtx" \
    --grad-b "$tmp/gb.mtx" --grad-A "$tmp/gA.mtx" --json
expect 0 "solve qc324 lu"; jeq converged true "solve qc324 lu"; jeq files_written true "solve qc324 lu"
pycheck "solve qc324 vs dense" "$PYLIB
A = mm(sys.argv[2]); B = mm(sys.argv[3]); X = mm(sys.argv[4])
Xr = np.linalg.solve(A, B)
e = np.abs(X - Xr).max() / np.abs(Xr).max(); check(e < 1e-9, 'relative error %g' % e)" /dev/null "$Q" "$tmp/b.mtx" "$tmp/xq.mtx"
# L = Re(sum_ij conj(W_i) X_ij): gb = A^-H W per column, gA_k = -sum_j gb_j[r] conj(x_j[c]),
# and the convention dL/dRe + i dL/dIm by central differences of dense solves
pycheck "solve qc324 gradients" "$PYLIB
A = mm(sys.argv[2]); B = mm(sys.argv[3]); W = mm(sys.argv[4])
Gb = mm(sys.argv[5]); r, c, gA = pattern(sys.argv[6])
X = np.linalg.solve(A, B); Wb = np.repeat(W, 2, axis=1)
Gr = np.linalg.solve(A.conj().T, Wb)
e = np.abs(Gb - Gr).max() / np.abs(Gr).max(); check(e < 1e-9, 'grad_b relative error %g' % e)
gr = -(Gr[r, :] * X[c, :].conj()).sum(axis=1)
e = np.abs(gA - gr).max() / np.abs(gr).max(); check(e < 1e-9, 'grad_A relative error %g' % e)
L = lambda M: np.real(np.sum(Wb.conj() * np.linalg.solve(M, B)))
h = 1e-4  # |L| ~ 3e4 and cond(A) ~ 5e4: rounding in L / h dominates below this
for k in (0, len(r) // 2, len(r) - 1):
    E = np.zeros_like(A); E[r[k], c[k]] = 1
    fd = (L(A + h * E) - L(A - h * E)) / (2 * h) + 1j * (L(A + 1j * h * E) - L(A - 1j * h * E)) / (2 * h)
    check(abs(fd - gA[k]) <= 1e-6 * max(1, abs(fd)), 'entry %d: fd %s vs %s' % (k, fd, gA[k]))
for i in (0, 100):
    E = np.zeros((A.shape[0], 2), complex); E[i, 1] = 1
    Lb = lambda Bm: np.real(np.sum(Wb.conj() * np.linalg.solve(A, Bm)))
    fd = (Lb(B + h * E) - Lb(B - h * E)) / (2 * h) + 1j * (Lb(B + 1j * h * E) - Lb(B - 1j * h * E)) / (2 * h)
    check(abs(fd - Gb[i, 1]) <= 1e-6 * max(1, abs(fd)), 'b entry %d: fd %s vs %s' % (i, fd, Gb[i, 1]))" \
    /dev/null "$Q" "$tmp/b.mtx" "$tmp/w.mtx" "$tmp/gb.mtx" "$tmp/gA.mtx"
if head -n 1 "$tmp/gA.mtx" | grep -q "coordinate complex"; then ok; else fail "--grad-A header: $(head -n 1 "$tmp/gA.mtx")"; fi
# the default right-hand side A 1 and a Krylov method
run solve "$Q" --method gmres --precond ilu0 --rtol 1e-10 --json --out "$tmp/xq1.mtx"
expect 0 "solve qc324 gmres"; jeq converged true "solve qc324 gmres"
pycheck "solve qc324 gmres: x = 1" "$PYLIB
x = mm(sys.argv[2]); check(np.abs(x - 1).max() < 1e-6, 'max |x - 1| = %g' % np.abs(x - 1).max())" /dev/null "$tmp/xq1.mtx"
# a seed of the wrong size
write_array "$tmp/w5.mtx" 5 1 1
run solve "$Q" --adjoint "$tmp/w5.mtx" --grad-b "$tmp/gb5.mtx"; expect 2 "solve seed size"; stderr_has "adjoint seed is 5 x 1" "solve seed size"
if [ ! -e "$tmp/gb5.mtx" ]; then ok; else fail "solve seed size: a file was written"; fi

# ---- logdet --------------------------------------------------------------------
run logdet "$Q" --json --grad-A "$tmp/gl.mtx"; expect 0 "logdet qc324"; one_json_object "logdet qc324"
jeq dtype complex128 "logdet qc324"; jeq singular false "logdet qc324"
pycheck "logdet qc324 vs slogdet" "$PYLIB
r = js(); A = mm(sys.argv[2]); s, la = np.linalg.slogdet(A)
check(abs(r['logabsdet'] - la) <= 1e-10 * max(1, abs(la)), 'logabsdet %s vs %s' % (r['logabsdet'], la))
check(abs(complex(*r['sign']) - s) < 1e-10, 'sign %s vs %s' % (r['sign'], s))
rr, cc, g = pattern(sys.argv[3]); Ai = np.linalg.inv(A); gr = Ai[cc, rr].conj()
e = np.abs(g - gr).max() / np.abs(gr).max(); check(e < 1e-9, 'grad relative error %g' % e)" "$OUT" "$Q" "$tmp/gl.mtx"
run logdet "$H" --json --method lu; expect 0 "logdet helmholtz"; jeq method lu "logdet helmholtz"
pycheck "logdet helmholtz vs slogdet" "$PYLIB
r = js(); s, la = np.linalg.slogdet(mm(sys.argv[2]))
check(abs(r['logabsdet'] - la) <= 1e-10 * max(1, abs(la)), 'logabsdet %s vs %s' % (r['logabsdet'], la))
check(abs(complex(*r['sign']) - s) < 1e-10, 'sign %s vs %s' % (r['sign'], s))" "$OUT" "$H"
# singular: det [[1, i], [i, -1]] = 0
printf '%%%%MatrixMarket matrix coordinate complex general\n2 2 4\n1 1 1 0\n1 2 0 1\n2 1 0 1\n2 2 -1 0\n' >"$tmp/sing.mtx"
run logdet "$tmp/sing.mtx" --json; expect 0 "logdet singular complex"; jeq singular true "logdet singular complex"
jeq logabsdet null "logdet singular complex"; stdout_has '"sign":\[0,0\]' "logdet singular complex"
run logdet "$tmp/sing.mtx" --grad-A "$tmp/gs.mtx"; expect 2 "logdet singular complex --grad-A"
if [ ! -e "$tmp/gs.mtx" ]; then ok; else fail "logdet singular complex: a gradient was written"; fi
run logdet "$Q" --method slq; expect 2 "logdet slq complex"; stderr_has "no complex path" "logdet slq complex"

# ---- eigsh on a Hermitian file ---------------------------------------------------
# a random sparse Hermitian matrix stored as "hermitian" (one triangle), n = 300:
# past the dense zheevd cut-off, so ARPACK runs
$PY -c "$PYLIB
import scipy.sparse as sp
n = 300; rng = np.random.default_rng(7)
R = sp.random(n, n, density=0.01, random_state=3, format='coo')
M = (R.toarray() + 1j * sp.random(n, n, density=0.01, random_state=4).toarray())
M = M + M.conj().T + np.diag(rng.standard_normal(n) * 3)
def write(path, M):
    L = sp.tril(sp.csr_matrix(M)).tocoo()
    with open(path, 'w') as f:
        f.write('%%%%MatrixMarket matrix coordinate complex hermitian\n%d %d %d\n' % (n, n, L.nnz))
        for i, j, v in zip(L.row, L.col, L.data):
            f.write('%d %d %.17g %.17g\n' % (i + 1, j + 1, v.real, v.imag if i != j else 0.0))
write(sys.argv[2], M)
# diagonally dominant with a positive diagonal: Hermitian positive definite
write(sys.argv[3], M + np.eye(n) * (np.abs(M).sum(axis=1).max() + 1))
" /dev/null "$tmp/herm.mtx" "$tmp/hpd.mtx"
run info "$tmp/herm.mtx" --json; expect 0 "info hermitian"; jeq hermitian true "info hermitian"
for which in LA SA; do
    run eigsh "$tmp/herm.mtx" -k 4 --which $which --json --out "$tmp/V$which.mtx"
    expect 0 "eigsh hermitian $which"; one_json_object "eigsh hermitian $which"; jeq converged true "eigsh $which"
    pycheck "eigsh hermitian $which vs eigvalsh" "$PYLIB
r = js(); A = mm(sys.argv[2]); V = mm(sys.argv[3]); l = np.linalg.eigvalsh(A)
ref = l[-4:] if sys.argv[4] == 'LA' else l[:4]
w = np.array(r['eigenvalues'])
check(np.abs(w - ref).max() < 1e-9 * np.abs(l).max(), 'eigenvalues %s vs %s' % (w, ref))
res = np.linalg.norm(A @ V - V * w, axis=0)
check(res.max() < 1e-8 * np.abs(l).max(), 'residuals %s' % res)
check(np.allclose(V.conj().T @ V, np.eye(4), atol=1e-9), 'not orthonormal')
check(max(r['residuals']) < 1e-8 * np.abs(l).max(), 'reported residuals %s' % r['residuals'])" "$OUT" "$tmp/herm.mtx" "$tmp/V$which.mtx" $which
done
# Hermitian positive definite: auto factors with Cholesky
run logdet "$tmp/hpd.mtx" --json --grad-A "$tmp/gh.mtx"; expect 0 "logdet hpd"; jeq method cholesky "logdet hpd"
pycheck "logdet hpd vs slogdet" "$PYLIB
r = js(); A = mm(sys.argv[2]); s, la = np.linalg.slogdet(A)
check(abs(r['logabsdet'] - la) <= 1e-10 * max(1, abs(la)), 'logabsdet %s vs %s' % (r['logabsdet'], la))
check(abs(complex(*r['sign']) - 1) < 1e-12, 'sign %s' % r['sign'])
rr, cc, g = pattern(sys.argv[3]); gr = np.linalg.inv(A)[cc, rr].conj()
e = np.abs(g - gr).max() / np.abs(gr).max(); check(e < 1e-9, 'grad relative error %g' % e)" "$OUT" "$tmp/hpd.mtx" "$tmp/gh.mtx"
run solve "$tmp/hpd.mtx" --method cg --precond ic0 --rtol 1e-10 --json; expect 0 "solve hpd cg"
jeq method cg "solve hpd cg"; jeq converged true "solve hpd cg"
run eigsh "$H" -k 2 --json; expect 2 "eigsh non-Hermitian"; stderr_has "hermitian|symmetric" "eigsh non-Hermitian"
run eigsh "$tmp/herm.mtx" -k 2 --M "$tmp/herm.mtx"; expect 2 "eigsh --M complex"; stderr_has "no complex path" "eigsh --M complex"

# ---- refusals ---------------------------------------------------------------------
for cmd in lsqr svds eigs; do
    run $cmd "$Q"; expect 2 "$cmd complex"; stderr_has "$cmd has no complex path" "$cmd complex"
    if [ "$(wc -l <"$ERR")" -eq 1 ]; then ok; else fail "$cmd complex: the message is not one line"; fi
done
# a hermitian file whose diagonal is not real: refused naming the line
printf '%%%%MatrixMarket matrix coordinate complex hermitian\n2 2 3\n1 1 2 0\n2 1 1 1\n2 2 3 0.5\n' >"$tmp/bad.mtx"
for cmd in info solve logdet eigsh; do
    run $cmd "$tmp/bad.mtx"; expect 2 "$cmd bad hermitian"; stderr_has "bad.mtx:5" "$cmd bad hermitian"
done

cli_finish test_cli_complex
