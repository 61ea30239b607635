#!/usr/bin/env bash
# End-to-end tests of `sla lsqr` (damped least squares by LSQR and LSMR,
# its VJP, the output files and the refusals).
#   bash test_cli_lsq.sh <path-to-sla> <test-data-dir>
set -u

SLA=${1:?usage: test_cli_lsq.sh <path-to-sla> <test-data-dir>}
DATA=${2:?usage: test_cli_lsq.sh <path-to-sla> <test-data-dir>}
. "$(dirname "$0")/cli_lib.sh"
cli_init sla-cli-lsq

# maxdiff F G: the largest |f_i - g_i| between two one-column array files.
maxdiff() { paste <(grep -v '^%' "$1" | sed 1d) <(grep -v '^%' "$2" | sed 1d) |
    awk '{ d = $1 - $2; if (d < 0) d = -d; if (d > m) m = d } END { printf "%.3g", m }'; }
small() { awk -v a="$1" -v t="$2" 'BEGIN { exit !(a <= t) }'; }

E=$DATA/lp_e226.mtx
F=$DATA/Franz6_id1959_aug.mtx

run lsqr --help; expect 0 "lsqr --help"; stdout_has "usage: sla lsqr" "lsqr --help"
run help lsqr; expect 0 "help lsqr"; stdout_has "LSMR" "help lsqr"

# lp_e226 (223 x 472, underdetermined, b = A*1: compatible)
for m in lsqr lsmr; do
    run lsqr "$E" --method $m --atol 1e-14 --btol 1e-14 --maxiter 5000 --json --out "$tmp/x_$m.mtx"
    expect 0 "lp_e226 $m"; one_json_object "lp_e226 $m"
    jeq m 223 "lp_e226 $m"; jeq n 472 "lp_e226 $m"; jeq method $m "lp_e226 $m"
    jeq converged true "lp_e226 $m"; jeq reason compatible "lp_e226 $m"; jeq files_written true "lp_e226 $m"
    r=$(jget residual_norm)
    if small "$r" 1e-6; then ok; else fail "lp_e226 $m: residual $r"; fi
    if [ "$(mm_size "$tmp/x_$m.mtx")" = "472 1" ]; then ok; else fail "lp_e226 $m: x size"; fi
done
# sla info names the sizes as lsqr does: m rows, n columns
run info "$E" --json; expect 0 "info lp_e226"; jeq m 223 "info lp_e226"; jeq n 472 "info lp_e226"
d=$(maxdiff "$tmp/x_lsqr.mtx" "$tmp/x_lsmr.mtx")
if small "$d" 1e-6; then ok; else fail "lp_e226: lsqr and lsmr differ by $d"; fi

# Franz6 (10592 x 3016), damped, a right-hand side file, and the VJP
write_array "$tmp/b.mtx" 10592 1 'sin(i)'
write_array "$tmp/w.mtx" 3016 1 'cos(i)'
run lsqr "$F" --rhs "$tmp/b.mtx" --damp 2 --atol 1e-12 --btol 1e-12 --json --out "$tmp/xf.mtx" \
    --adjoint "$tmp/w.mtx" --grad-b "$tmp/gb.mtx" --grad-A "$tmp/gA.mtx"
expect 0 "Franz6 damped with adjoint"; one_json_object "Franz6"
jeq m 10592 "Franz6"; jeq reason normal "Franz6"
a=$(jget_adj converged); if [ "$a" = true ]; then ok; else fail "Franz6: adjoint converged '$a'"; fi
if [ "$(mm_size "$tmp/gb.mtx")" = "10592 1" ]; then ok; else fail "Franz6: gb size"; fi
nnz=$(jget nnz)
if [ "$(mm_entries "$tmp/gA.mtx")" = "$nnz" ]; then ok; else fail "Franz6: gA has not $nnz entries"; fi
run lsqr "$F" --rhs "$tmp/b.mtx" --damp 2 --atol 1e-12 --btol 1e-12 --method lsmr --out "$tmp/xf2.mtx"
expect 0 "Franz6 lsmr"; stdout_has "stopped by normal" "Franz6 lsmr text report"
d=$(maxdiff "$tmp/xf.mtx" "$tmp/xf2.mtx")
if small "$d" 1e-9; then ok; else fail "Franz6: lsqr and lsmr differ by $d"; fi

# the direct path (SuiteSparseQR) agrees with LSQR on Franz6 and is exact to round-off
if "$SLA" methods --json | grep -q '"name":"umfpack","kind":"direct","available":true'; then # SuiteSparse
  run lsqr "$F" --rhs "$tmp/b.mtx" --damp 2 --method qr --out "$tmp/xf3.mtx" --json
  expect 0 "Franz6 qr"; jeq method qr "Franz6 qr"
  d=$(maxdiff "$tmp/xf.mtx" "$tmp/xf3.mtx")
  if small "$d" 1e-9; then ok; else fail "Franz6: lsqr and qr differ by $d"; fi
fi

# not converged: exit 3, reason maxiter
run lsqr "$E" --maxiter 3 --json; expect 3 "maxiter 3"; jeq reason maxiter "maxiter 3"; jeq converged false "maxiter 3"

# refusals
run lsqr "$E" --damp -1; expect 2 "damp -1"; stderr_has "--damp" "damp -1"
run lsqr "$E" --method svd; expect 2 "method svd"; stderr_has "lsqr, lsmr or qr" "method svd"
run lsqr "$E" --dampp 1; expect 2 "--dampp"; stderr_has "did you mean --damp" "--dampp"
run lsqr "$E" --grad-b "$tmp/g.mtx"; expect 2 "grad-b without adjoint"; stderr_has "needs --adjoint" "grad-b"
run lsqr "$E" --rhs "$tmp/w.mtx"; expect 2 "rhs of the wrong size"; stderr_has "right-hand side is 3016 x 1" "rhs size"
run lsqr "$E" --out "$E"; expect 2 "output over the input"
run lsqr; expect 2 "no matrix"
# --transpose: explicit A^T and scatter give the same x (one thread: bit for bit)
run lsqr "$E" --maxiter 200 --transpose scatter --threads 1 --out "$tmp/xs.mtx"; expect 3 "lsqr --transpose scatter"
run lsqr "$E" --maxiter 200 --transpose explicit --threads 1 --out "$tmp/xe.mtx"; expect 3 "lsqr --transpose explicit"
if cmp -s "$tmp/xs.mtx" "$tmp/xe.mtx"; then ok; else fail "lsqr --transpose: x differs"; fi
run lsqr "$E" --transpose gather; expect 2 "lsqr --transpose gather"; stderr_has "explicit or scatter" "lsqr --transpose gather"

cli_finish test_cli_lsq
