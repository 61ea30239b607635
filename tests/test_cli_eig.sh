#!/usr/bin/env bash
# End-to-end tests of `sla eigsh` and `sla logdet`.
#   bash test_cli_eig.sh <path-to-sla> <test-data-dir>
# Every check runs the real binary (under ASan in the sanitizer build, where
# a leak or a memory error changes the exit status and fails the check).
set -u

SLA=${1:?usage: test_cli_eig.sh <path-to-sla> <test-data-dir>}
DATA=${2:?usage: test_cli_eig.sh <path-to-sla> <test-data-dir>}
. "$(dirname "$0")/cli_lib.sh"
cli_init sla-cli-eig

# jarr KEY: the elements of the JSON array "KEY":[...] one per line.
jarr() { grep -o "\"$1\":\[[^]]*\]" "$OUT" | sed 's/^[^[]*\[//; s/\]$//' | tr ',' '\n'; }
# close A B TOL: |A - B| <= TOL * max(1, |A|, |B|)
close() { awk -v a="$1" -v b="$2" -v t="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; m = 1;
    if (a > m || -a > m) m = (a < 0 ? -a : a); if (b > m || -b > m) m = (b < 0 ? -b : b);
    exit !(d <= t * m) }'; }

A=$tmp/A.mtx
run gen poisson2d 20 -o "$A"; expect 0 "gen poisson2d 20"
have_arpack=1

# ---- eigsh -----------------------------------------------------------------
run eigsh --help; expect 0 "eigsh --help"; stdout_has "usage: sla eigsh" "eigsh --help"
run eigsh "$A" -k 4 --which SM --json
if [ "$rc" -eq 2 ] && grep -qi "arpack" "$ERR"; then
    have_arpack=0; ok   # a build without ARPACK says so
else
    expect 0 "eigsh SM"; one_json_object "eigsh SM"
    jeq converged true "eigsh SM"; jeq nconv 4 "eigsh SM"; jeq which SM "eigsh SM"
    stdout_has '"method":"arpack shift-invert \(cholesky\)"' "eigsh SM"
    # smallest: 2 (2 - 2 cos(pi / 21)); the next two equal
    l0=$(jarr eigenvalues | sed -n 1p); l1=$(jarr eigenvalues | sed -n 2p); l2=$(jarr eigenvalues | sed -n 3p)
    ref=$(awk 'BEGIN { printf "%.17g", 4 - 4 * cos(atan2(0, -1) / 21) }')
    if close "$l0" "$ref" 1e-12; then ok; else fail "eigsh SM: l0 = $l0, expected $ref"; fi
    if close "$l1" "$l2" 1e-12; then ok; else fail "eigsh SM: l1 = $l1 != l2 = $l2"; fi
    r=$(jarr residuals | sort -g | tail -1)
    if close "$r" 0 1e-10; then ok; else fail "eigsh SM: residual $r"; fi
fi

if [ "$have_arpack" = 1 ]; then
    # LA and ascending order; eigenvectors written
    run eigsh "$A" -k 3 --which LA --json --out "$tmp/V.mtx"; expect 0 "eigsh LA"
    if [ "$(jarr eigenvalues | sort -g | tr '\n' ' ')" = "$(jarr eigenvalues | tr '\n' ' ')" ]; then ok; else
        fail "eigsh LA: eigenvalues not ascending"; fi
    top=$(jarr eigenvalues | tail -1)
    ref=$(awk 'BEGIN { printf "%.17g", 4 + 4 * cos(atan2(0, -1) / 21) }')
    if close "$top" "$ref" 1e-12; then ok; else fail "eigsh LA: top = $top, expected $ref"; fi
    if [ "$(mm_size "$tmp/V.mtx")" = "400 3" ]; then ok; else fail "eigsh --out: size $(mm_size "$tmp/V.mtx")"; fi
    # shift-invert: interior eigenvalues near sigma
    run eigsh "$A" -k 3 --sigma 3.3 --json; expect 0 "eigsh --sigma"
    jeq sigma 3.2999999999999998 "eigsh --sigma"
    for l in $(jarr eigenvalues); do
        if close "$l" 3.3 0.05; then ok; else fail "eigsh --sigma 3.3: eigenvalue $l far from sigma"; fi
    done
    # LM vs LA on an indefinite matrix (A - 4 I: spectrum symmetric about 0)
    run gen random 60 -o "$tmp/S.mtx" --seed 3 --kind symmetric; expect 0 "gen random symmetric"
    run eigsh "$tmp/S.mtx" -k 2 --which LM --json; expect 0 "eigsh LM"; lm=$(jarr eigenvalues | head -1)
    run eigsh "$tmp/S.mtx" -k 2 --which LA --json; expect 0 "eigsh LA"; la=$(jarr eigenvalues | head -1)
    if awk -v a="$lm" -v b="$la" 'BEGIN { exit !(a != b) }'; then ok; else fail "LM and LA agree ($lm)"; fi
    # SA on a power network where plain Lanczos stalls: shift-invert below the spectrum
    # (l0 from dense dsyevd, as in test_eigsh)
    run eigsh "$DATA/494_bus.mtx" -k 4 --which SA --json; expect 0 "eigsh 494_bus SA"
    jeq converged true "eigsh 494_bus SA"; jeq nconv 4 "eigsh 494_bus SA"
    stdout_has '"method":"arpack shift-invert \(cholesky\)"' "eigsh 494_bus SA"
    stdout_has '"note":"SA: shift-invert below the spectrum, sigma = ' "eigsh 494_bus SA"
    l0=$(jarr eigenvalues | sed -n 1p)
    if close "$l0" 0.012422375135029 1e-10; then ok; else fail "eigsh 494_bus SA: l0 = $l0"; fi
    # no factorization fits: LOBPCG, said so
    run eigsh "$DATA/494_bus.mtx" -k 4 --which SA --memory-limit 1 --json; expect 0 "eigsh SA --memory-limit 1"
    jeq converged true "eigsh SA --memory-limit 1"; stdout_has '"method":"lobpcg"' "eigsh SA --memory-limit 1"
    stdout_has 'over memory_limit' "eigsh SA --memory-limit 1"
    l0=$(jarr eigenvalues | sed -n 1p)
    if close "$l0" 0.012422375135029 1e-8; then ok; else fail "eigsh 494_bus SA by LOBPCG: l0 = $l0"; fi
    # text report
    run eigsh "$A" -k 2 --which SA; expect 0 "eigsh text"; stdout_has 'residual' "eigsh text"
    # non-convergence is exit 3, reported
    run eigsh "$A" -k 4 --which LM --ncv 6 --maxiter 2 --json; expect 3 "eigsh not converged"
    jeq converged false "eigsh not converged"; stderr_has 'converged' "eigsh not converged"
    # issue 21 defect 7: a NaN iterate with --out keeps exit 3 + JSON, writes nothing
    run gen poisson2d 60 -o "$tmp/p60.mtx"; expect 0 "gen poisson2d 60"
    echo PRECIOUS >"$tmp/V.mtx"
    run eigsh "$tmp/p60.mtx" -k 5 --which SA --maxiter 1 --ncv 6 --json
    if [ "$rc" -eq 3 ] && grep -q nan <(jarr eigenvalues; jarr residuals; true) || [ "$rc" -eq 3 ]; then
        run eigsh "$tmp/p60.mtx" -k 5 --which SA --maxiter 1 --ncv 6 --json --out "$tmp/V.mtx"
        expect 3 "eigsh not converged with --out"; one_json_object "eigsh not converged with --out"
        if [ "$(cat "$tmp/V.mtx")" = PRECIOUS ]; then jeq files_written false "eigsh non-finite --out"
        else jeq files_written true "eigsh --out (finite vectors)"; fi
    fi
    # errors
    run eigsh "$A" -k 3 --which XX;   expect 2 "eigsh bad which"; stderr_has 'did you mean' "eigsh bad which"
    run eigsh "$A" -k 0;              expect 2 "eigsh k = 0"
    run eigsh "$A" -k 400;            expect 2 "eigsh k = n"
    run eigsh "$DATA/west0067.mtx" -k 2; expect 2 "eigsh nonsymmetric"; stderr_has 'not symmetric' "eigsh nonsymmetric"
    run eigsh "$A" -k 2 --sigma abc;  expect 2 "eigsh bad sigma"
    run eigsh "$A" -k 2 --method cg --sigma 1; expect 2 "eigsh iterative factorization"
    run eigsh;                        expect 2 "eigsh without a file"
fi

# ---- logdet ----------------------------------------------------------------
run logdet --help; expect 0 "logdet --help"; stdout_has "usage: sla logdet" "logdet --help"
run logdet "$A" --json --grad-A "$tmp/G.mtx"
if [ "$rc" -eq 2 ] && grep -qi "not available in this build" "$ERR"; then
    ok   # a build without SuiteSparse says so
    echo "test_cli_eig: $checks checks passed, $fails failed (logdet skipped: no direct backend)"
    [ "$fails" -eq 0 ]
    exit
fi
expect 0 "logdet"; one_json_object "logdet"
jeq sign 1 "logdet"; jeq method cholesky "logdet"; jeq grad_method selinv "logdet"; jeq singular false "logdet"
lc=$(jget logabsdet)
if [ "$(mm_entries "$tmp/G.mtx")" = 1920 ]; then ok; else fail "logdet --grad-A: $(mm_entries "$tmp/G.mtx") entries"; fi
# the gradient's diagonal sums to tr(A^-1) and <A, G> = n (sum_ij a_ij (A^-1)_ji = tr(I))
dot=$(paste <(grep -v '^%' "$A" | sed 1d) <(grep -v '^%' "$tmp/G.mtx" | sed 1d) | awk '{ s += $3 * $6 } END { printf "%.12g", s }')
if close "$dot" 400 1e-10; then ok; else fail "logdet gradient: <A, G> = $dot, expected n = 400"; fi
run logdet "$A" --json --method lu; expect 0 "logdet lu"; jeq method lu "logdet lu"
if close "$(jget logabsdet)" "$lc" 1e-12; then ok; else fail "logdet lu $(jget logabsdet) vs cholesky $lc"; fi
run logdet "$A" --method ldlt; expect 0 "logdet text"; stdout_has 'log\|det\| = ' "logdet text"
run logdet "$DATA/west0067.mtx" --json; expect 0 "logdet nonsymmetric"; jeq sign -1 "logdet west0067"; jeq method lu "logdet west0067"
jeq grad_method "" "logdet west0067 without gradient"
# LU gradient by selected inversion: an unsymmetric arrowhead, <A, G> = tr(A A^-1) = n
run gen arrow 300 -o "$tmp/W.mtx" --dense 5 -q; expect 0 "gen arrow"
run logdet "$tmp/W.mtx" --json --grad-A "$tmp/GW.mtx"; expect 0 "logdet arrow"
jeq method lu "logdet arrow"; jeq grad_method selinv "logdet arrow"
dot=$(paste <(grep -v '^%' "$tmp/W.mtx" | sed 1d) <(grep -v '^%' "$tmp/GW.mtx" | sed 1d) | awk '{ s += $3 * $6 } END { printf "%.12g", s }')
if close "$dot" 300 1e-10; then ok; else fail "logdet arrow gradient: <A, G> = $dot, expected n = 300"; fi
run logdet "$DATA/west0067.mtx" --method cholesky; expect 2 "logdet cholesky of a nonsymmetric matrix"
stderr_has 'symmetric' "logdet cholesky nonsymmetric"
# singular: the 1D Neumann Laplacian
printf '%%%%MatrixMarket matrix coordinate real general\n3 3 7\n1 1 1\n1 2 -1\n2 1 -1\n2 2 2\n2 3 -1\n3 2 -1\n3 3 1\n' > "$tmp/N.mtx"
run logdet "$tmp/N.mtx" --json; expect 0 "logdet singular"; jeq sign 0 "logdet singular"
jeq logabsdet null "logdet singular"; jeq singular true "logdet singular"; stderr_has 'singular' "logdet singular"
run logdet "$tmp/N.mtx" --grad-A "$tmp/GN.mtx"; expect 2 "logdet singular gradient refused"
run logdet "$A" --method qr;  expect 2 "logdet bad method"; stderr_has 'did you mean' "logdet bad method"
run logdet "$DATA/qc324.mtx" --method ldlt; expect 2 "logdet complex matrix, ldlt"; stderr_has "no complex path" "logdet complex ldlt"

# stochastic Lanczos quadrature: within 4 standard errors of the exact value
run logdet "$A" --method slq --probes 64 --json --grad-A "$tmp/GS.mtx"
if [ "$rc" -eq 2 ] && grep -qi "lapack" "$ERR"; then ok; else
    expect 0 "logdet slq"; jeq method slq "logdet slq"; jeq grad_method hutchinson "logdet slq"
    est=$(jget logabsdet); se=$(jget std_error)
    if awk -v a="$est" -v b="$lc" -v s="$se" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(s > 0 && d <= 4 * s) }'; then
        ok; else fail "logdet slq: $est +- $se vs exact $lc"; fi
    if [ "$(mm_entries "$tmp/GS.mtx")" = 1920 ]; then ok; else fail "logdet slq --grad-A"; fi
fi
run logdet "$A" --method slq --probes 0; expect 2 "logdet slq --probes 0"

cli_finish test_cli_eig
