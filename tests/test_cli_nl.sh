#!/usr/bin/env bash
# End-to-end tests of `sla nlsolve` (nonlinear solve + implicit gradient).
#   bash test_cli_nl.sh <path-to-sla>
set -u

SLA=${1:?usage: test_cli_nl.sh <path-to-sla>}
. "$(dirname "$0")/cli_lib.sh"
cli_init sla-cli-nl

# awk_true EXPR DESCRIPTION: an awk condition on numbers
awk_true() { if awk "function abs(x) { return x < 0 ? -x : x } BEGIN { exit !($1) }"; then ok; else fail "$2: ($1) is false"; fi; }

# ---- Newton on Bratu, the JSON fields --------------------------------------
run nlsolve bratu2d 32 --mu 2 --json
expect 0 "newton bratu2d"
one_json_object "newton bratu2d"
for k in iterations residual converged reason L dL_dmu seconds; do
    if grep -q "\"$k\":" "$OUT"; then ok; else fail "JSON lacks \"$k\""; fi
done
jeq converged true "newton bratu2d"
jeq reason converged_rtol "newton bratu2d"
jeq method newton "newton bratu2d"
res=$(jget residual); L0=$(jget L); g=$(jget dL_dmu); its=$(jget iterations)
awk_true "$res < 1e-10" "residual below 1e-10"
awk_true "$its >= 2 && $its < 15" "newton iteration count"
awk_true "$L0 > 0 && $g > 0" "L and dL/dmu positive"
cp "$OUT" "$tmp/newton.json"

# dL/dmu against central differences of L from two more runs
eps=1e-5
run nlsolve bratu2d 32 --mu "$(awk "BEGIN { printf \"%.17g\", 2 + $eps }")" --json --atol 1e-14 --rtol 0
expect 0 "mu + eps"
Lp=$(jget L)
run nlsolve bratu2d 32 --mu "$(awk "BEGIN { printf \"%.17g\", 2 - $eps }")" --json --atol 1e-14 --rtol 0
expect 0 "mu - eps"
Lm=$(jget L)
awk_true "abs(($Lp - $Lm) / (2 * $eps) - $g) <= 1e-6 * abs($g)" \
    "dL/dmu ($g) against central differences"

# ---- Anderson and Picard reach the same solution and gradient --------------
for m in anderson picard; do
    run nlsolve bratu2d 32 --mu 2 --method "$m" --json
    expect 0 "$m"
    jeq converged true "$m"
    jeq method "$m" "$m"
    L=$(jget L); gm=$(jget dL_dmu)
    awk_true "abs($L - $L0) <= 1e-8 * $L0" "$m: L = $L vs newton $L0"
    awk_true "abs($gm - $g) <= 1e-7 * $g" "$m: dL/dmu = $gm vs newton $g"
done
run nlsolve bratu2d 32 --mu 2 --method anderson --depth 3 --beta 0.9 --json
expect 0 "anderson depth 3 beta 0.9"

# chord steps: same gradient, fewer factorizations
run nlsolve bratu2d 32 --mu 2 --chord 0.1 --json
expect 0 "newton with chord steps"
gc=$(jget dL_dmu); nc=$(jget chord_steps)
awk_true "$nc > 0" "chord steps taken"
awk_true "abs($gc - $g) <= 1e-10 * $g" "chord gradient $gc vs $g"
run nlsolve bratu2d 32 --mu 2 --chord 1.5
expect 2 "chord out of range"
stderr_has "chord_ratio" "chord out of range"

# Krylov linear solves give the same gradient
run nlsolve bratu2d 32 --mu 2 --linear method=cg,precond=ic0,rtol=1e-12 --json
expect 0 "newton with cg+ic0"
gk=$(jget dL_dmu)
awk_true "abs($gk - $g) <= 1e-8 * $g" "cg+ic0 gradient $gk vs $g"
stdout_has '"method":"cg"' "linear method reported"

# ---- beyond the turning point: failure, exit 3, no gradient ----------------
for m in newton anderson picard; do
    run nlsolve bratu2d 32 --mu 7.5 --method "$m" --maxiter 200 --json
    expect 3 "mu = 7.5 ($m)"
    one_json_object "mu = 7.5 ($m)"
    jeq converged false "mu = 7.5 ($m)"
    jeq dL_dmu null "mu = 7.5 ($m)"
    stdout_has '"reason":"diverged_' "mu = 7.5 ($m) reason"
done
run nlsolve bratu2d 32 --mu 7.5
expect 3 "mu = 7.5 text"
stdout_has "diverged_linesearch|diverged_maxiter" "text output names the reason"

# ---- text output and help --------------------------------------------------
run nlsolve bratu2d 16 --mu 1
expect 0 "text output"
stdout_has "dL/dmu = " "text output gradient"
run nlsolve --help
expect 0 "help"
stdout_has "usage: sla nlsolve" "help text"
run help nlsolve
expect 0 "sla help nlsolve"
run --help
stdout_has "nlsolve" "main help lists nlsolve"

# ---- bad input ------------------------------------------------------------
run nlsolve bratu2d 16
expect 2 "missing --mu"
stderr_has "--mu is required" "missing --mu"
run nlsolve bratu2d 16 --mu 1 --method newtn
expect 2 "unknown method"
stderr_has "newtn.*newton" "unknown method"
run nlsolve brat2d 16 --mu 1
expect 2 "unknown problem"
stderr_has "did you mean bratu2d" "unknown problem"
run nlsolve bratu2d 0 --mu 1
expect 2 "N = 0"
run nlsolve bratu2d 16 --mu abc
expect 2 "bad mu"
stderr_has "not a valid number" "bad mu"
run nlsolve bratu2d 16 --mu 1 --beta 2
expect 2 "beta out of range"
stderr_has "beta" "beta out of range"
run nlsolve bratu2d 16 --mu 1 --linear method=cgg
expect 2 "bad --linear"
stderr_has "cg" "bad --linear suggests"
run nlsolve bratu2d 16 --mu 1 --opts chord=0.1
expect 2 "unknown --opts key"
stderr_has "did you mean chord_ratio" "unknown --opts key"
run nlsolve bratu2d 16 --mu 1 --opts adjoint_reuse=false,ls_shrink=0.3 --json
expect 0 "--opts"
if grep -q '"adjoint_note":"adjoint: factorization' "$OUT"; then fail "--opts adjoint_reuse=false ignored"; else ok; fi
run nlsolve bratu2d 16 --mu 1 --frobnicate
expect 2 "unknown option"
run nlsolve bratu2d
expect 2 "missing N"

cli_finish test_cli_nl
