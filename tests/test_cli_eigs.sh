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
fi

cli_finish test_cli_eigs
