#!/usr/bin/env bash
# End-to-end tests of `sla eigs` (nonsymmetric eigenvalues) and of
# `sla eigsh --M` (the generalized symmetric-definite problem).
#   bash test_cli_eigs.sh <path-to-sla> <test-data-dir>
set -u

SLA=${1:?usage: test_cli_eigs.sh <path-to-sla> <test-data-dir>}
DATA=${2:?usage: test_cli_eigs.sh <path-to-sla> <test-data-dir>}
. "$(dirname "$0")/cli_lib.sh"
cli_init sla-cli-eigs

run eigs --help; expect 0 "eigs --help"; stdout_has "usage: sla eigs" "eigs --help"
run help; stdout_has "eigs A.mtx -k K" "help lists eigs"
run eigs "$DATA/west0067.mtx" -k 4 --json
if [ "$rc" -eq 2 ] && grep -qi "arpack" "$ERR"; then
    ok # a build without ARPACK says so
else
    expect 0 "eigs LM"; one_json_object "eigs LM"
    jeq converged true "eigs LM"; jeq nconv 4 "eigs LM"; jeq which LM "eigs LM"
    # west0067's four largest in magnitude: two conjugate pairs as [re, im]
    stdout_has '"eigenvalues":\[\[-1\.13168461044[0-9]*,0\.98243859958[0-9]*\],\[-1\.13168461044[0-9]*,-0\.98243859958' "eigs LM"
    stdout_has '"iterations":[0-9]+' "eigs LM"
    run eigs "$DATA/cage5.mtx" -k 3 --sigma 0.5 --json; expect 0 "eigs sigma"
    stdout_has '"method":"arnoldi shift-invert \(lu\)"' "eigs sigma"; jeq sigma 0.5 "eigs sigma"
    run eigs "$DATA/cage5.mtx" -k 2 --which LR; expect 0 "eigs LR text"; stdout_has "residual" "eigs LR text"
    run eigs "$DATA/cage5.mtx" -k 36; expect 2 "eigs k = n - 1"; stderr_has "n - 1" "eigs k = n - 1"
    run eigs "$DATA/lp_e226.mtx" -k 2; expect 2 "eigs rectangular"; stderr_has "not square" "eigs rectangular"
    run eigs "$DATA/cage5.mtx" --which LA; expect 2 "eigs --which LA"
    run eigs "$DATA/cage5.mtx" -k 3 --ncv 4; expect 2 "eigs ncv"; stderr_has "k \+ 2" "eigs ncv"
    # generalized: K = M gives l = 1 for all
    K=$tmp/K.mtx
    run gen poisson2d 10 -o "$K"; expect 0 "gen poisson2d 10"
    run eigsh "$K" --M "$K" -k 3 --json; expect 0 "eigsh --M"; jeq converged true "eigsh --M"
    stdout_has '"eigenvalues":\[(0\.99999999999|1\.0000000000)' "eigsh --M"
    stdout_has '"method":"arpack mode 3' "eigsh --M"
    run eigsh "$K" --M "$DATA/cage5.mtx" -k 3; expect 2 "eigsh --M other order"; stderr_has "but M is 37 x 37" "eigsh --M"

    # --method lobpcg with --M: K = poisson1d N (tridiag -1 2 -1), M the 1D
    # linear-element mass matrix (tridiag 1 4 1)/6. Both are diagonalized by
    # sin(j pi i / (N + 1)), so l_j = (2 - 2 cos t) / ((4 + 2 cos t) / 6),
    # t = j pi / (N + 1): an analytic reference, independent of both solvers.
    N=60
    K1=$tmp/K1.mtx; M1=$tmp/M1.mtx
    run gen poisson1d $N -o "$K1"; expect 0 "gen poisson1d $N"
    awk -v n=$N 'BEGIN { print "%%MatrixMarket matrix coordinate real symmetric"; print n, n, 2 * n - 1;
        for (i = 1; i <= n; i++) { printf "%d %d %.17g\n", i, i, 4.0 / 6.0;
            if (i < n) printf "%d %d %.17g\n", i + 1, i, 1.0 / 6.0 } }' >"$M1"
    exact=$(awk -v n=$N 'BEGIN { pi = atan2(0, -1); for (j = 1; j <= 3; j++) { c = cos(j * pi / (n + 1));
        printf "%.17g ", (2 - 2 * c) / ((4 + 2 * c) / 6) } }')
    # lmaxdiff: the largest relative difference of the report's eigenvalues from $exact
    lmaxdiff() { grep -o '"eigenvalues":\[[^]]*' "$OUT" | sed 's/.*\[//' | tr ',' ' ' |
        awk -v e="$exact" '{ split(e, x, " "); for (i = 1; i <= NF; i++) { d = ($i - x[i]) / x[i];
            if (d < 0) d = -d; if (d > m) m = d } } END { printf "%.3g", m + 0 }'; }
    run eigsh "$K1" --M "$M1" -k 3 --method lobpcg --json --out "$tmp/X1.mtx"
    expect 0 "eigsh --M --method lobpcg"; one_json_object "eigsh --M lobpcg"
    jeq converged true "eigsh --M lobpcg"; jeq which SA "eigsh --M lobpcg"; jeq sigma null "eigsh --M lobpcg"
    stdout_has '"method":"lobpcg \(' "eigsh --M lobpcg"; jeq files_written true "eigsh --M lobpcg"
    d=$(lmaxdiff)
    if awk -v a="$d" 'BEGIN { exit !(a <= 1e-9) }'; then ok; else fail "eigsh --M lobpcg: eigenvalues off by $d (exact $exact)"; fi
    if [ "$(mm_size "$tmp/X1.mtx")" = "$N 3" ]; then ok; else fail "eigsh --M lobpcg: X size"; fi
    # the ARPACK mode-3 path on the same pencil agrees with the same reference
    run eigsh "$K1" --M "$M1" -k 3 --json; expect 0 "eigsh --M arpack (1d)"
    d=$(lmaxdiff)
    if awk -v a="$d" 'BEGIN { exit !(a <= 1e-10) }'; then ok; else fail "eigsh --M arpack: eigenvalues off by $d"; fi
    # without --M: K's own smallest, 2 - 2 cos t
    run eigsh "$K1" -k 2 --method lobpcg --precond jacobi --maxiter 3000
    expect 0 "eigsh lobpcg (text)"; stdout_has "lobpcg \(jacobi\)" "eigsh lobpcg text"
    stdout_has "iterations, [0-9]+ products with A" "eigsh lobpcg text"
    l0=$(awk -v n=$N 'BEGIN { printf "%.8f", 2 - 2 * cos(atan2(0, -1) / (n + 1)) }')
    stdout_has "  0  +${l0}" "eigsh lobpcg l0 = $l0"
    # refusals: what does not apply to LOBPCG, a bad preconditioner, --precond without lobpcg
    run eigsh "$K1" --method lobpcg --which LA -k 2; expect 2 "lobpcg LA"; stderr_has "must be SA" "lobpcg LA"
    run eigsh "$K1" --method lobpcg --sigma 1 -k 2; expect 2 "lobpcg sigma"; stderr_has "does not apply" "lobpcg sigma"
    run eigsh "$K1" --method lobpcg --precond ic1 -k 2; expect 2 "lobpcg precond"; stderr_has "precond" "lobpcg precond"
    run eigsh "$K1" --precond jacobi -k 2; expect 2 "precond without lobpcg"; stderr_has "lobpcg only" "precond w/o lobpcg"
    run eigsh "$K1" --method lobpcg -k 20; expect 2 "lobpcg k"; stderr_has "3 k < n" "lobpcg k"
    # not converged: exit 3 with the library's message (not the one --out's writing left)
    run eigsh "$K1" --M "$M1" -k 3 --method lobpcg --maxiter 1 --out "$tmp/X2.mtx"
    expect 3 "lobpcg maxiter 1"; stderr_has "lobpcg: [0-2] of 3 eigenpairs" "lobpcg maxiter 1"
fi

cli_finish test_cli_eigs
