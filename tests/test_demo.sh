#!/usr/bin/env bash
# End-to-end test of `sla demo inverse` (the main job's optimisation loop).
#   bash test_demo.sh <path-to-sla>
# Short runs only: a few Adam steps (the loss must fall and the JSON line
# must be the last line of stdout), the gradient check against finite
# differences, the PNG when gnuplot is there, and option errors. Under ASan
# a leak or a memory error changes the exit status and fails the check.
set -u

SLA=${1:?usage: test_demo.sh <path-to-sla>}
. "$(dirname "$0")/cli_lib.sh"
CLI_SHOW=tail # the JSON line and the last steps are at the end
cli_init sla-demo

# jlast KEY: the value of "KEY" in the last line of stdout.
jlast() { tail -n 1 "$OUT" | grep -o "\"$1\": *[^,}]*" | head -n 1 | sed 's/^[^:]*: *//; s/"//g'; }
# fcmp A OP B: floating-point comparison with awk (OP: < <= > >=).
fcmp() { awk -v a="$1" -v b="$3" "BEGIN { exit !((a + 0) $2 (b + 0)) }"; }

# ---- help and option errors ------------------------------------------------
run demo inverse --help;         expect 0 "demo inverse --help"
stdout_has 'usage: sla demo inverse' "demo inverse --help"
run demo --help;                 expect 0 "demo --help"; stdout_has 'inverse' "demo --help"
run demo inverse --frobnicate;   expect 2 "unknown option"; stderr_has 'unknown option' "unknown option"
run demo inverse --steps 0;      expect 2 "--steps 0"
run demo inverse --n abc;        expect 2 "--n abc"
run demo inverse --method foo;   expect 2 "--method foo"; stderr_has 'method' "--method foo"
run demo inverse --steps;        expect 2 "--steps without a value"
# issue 21 defect 8: a newline in --png would inject gnuplot commands
(cd "$tmp" && "$SLA" demo inverse --steps 2 --n 4 --png "a.png
!touch PWNED") >"$OUT" 2>"$ERR"; rc=$?; LAST_CMD="demo inverse --png \$'a.png\\n!touch PWNED'"
expect 2 "--png with a newline"; stderr_has 'control character' "--png with a newline"
[ -e "$tmp/PWNED" ] && fail "--png with a newline ran a shell command" || ok
run demo inverse --steps 2 --n 4 --png "$tmp/nodir/k.png"; expect 2 "--png in a missing folder"
# the image is made by gnuplot in a temporary folder and then put in place:
# a stand-in gnuplot (writes FAKEPNG to the script's output) checks that the
# user's name never reaches the script and that the file lands atomically
mkdir -p "$tmp/fakebin"
cat >"$tmp/fakebin/gnuplot" <<'GP'
#!/bin/sh
out=$(sed -n "s/^set output '\(.*\)'$/\1/p" "$1")
grep -q "q'uote" "$1" && exit 5
printf 'FAKEPNG\n' >"$out"
GP
chmod +x "$tmp/fakebin/gnuplot"
echo PRECIOUS >"$tmp/q'uote.png"
PATH="$tmp/fakebin:$PATH" run demo inverse --steps 2 --n 4 --png "$tmp/q'uote.png"
expect 0 "--png through a stand-in gnuplot"; stdout_has "png: .*q'uote\.png" "--png through a stand-in gnuplot"
if [ "$(cat "$tmp/q'uote.png")" = FAKEPNG ]; then ok; else fail "--png: the image was not put in place"; fi
ls -a "$tmp" | grep -q 'sla-' && fail "--png left a temporary file" || ok

# ---- a short optimisation: the loss falls, JSON is the last line ----------
run demo inverse --n 32 --steps 30 --json --png "$tmp/k.png"
expect 0 "demo inverse --steps 30"
if tail -n 1 "$OUT" | grep -Eq '^\{.*\}$'; then ok; else fail "last line is not a JSON object"; fi
for k in steps loss loss_first rel_l2_error seconds; do
    v=$(jlast "$k")
    if [ -n "$v" ]; then ok; else fail "JSON lacks \"$k\""; fi
done
steps=$(jlast steps); loss=$(jlast loss); loss0=$(jlast loss_first); e=$(jlast rel_l2_error)
if [ "$steps" = 30 ]; then ok; else fail "steps is '$steps', expected 30"; fi
if fcmp "$loss" '<' "$loss0" && fcmp "$loss" '<' "0.2 * $loss0"; then ok; else
    fail "loss did not fall enough: $loss0 -> $loss"; fi
# kappa = 1 is 24 % off kappa*; 30 steps must get closer.
if fcmp "$e" '<' 0.24 && fcmp "$e" '>' 0; then ok; else fail "rel_l2_error $e not below 0.24"; fi
stdout_has '^ +0 +[0-9.e+-]+' "progress line for step 0"
stdout_has 'relative L2 error of kappa' "summary"
if command -v gnuplot >/dev/null 2>&1; then
    if [ -s "$tmp/k.png" ] && head -c 8 "$tmp/k.png" | od -An -c | grep -q 'P   N   G'; then ok; else
        fail "no PNG written although gnuplot is on PATH"; fi
else
    stdout_has 'png: skipped' "PNG skipped without gnuplot"
fi

# --png '' writes nothing; more steps with the direct solver converge further.
run demo inverse --n 16 --steps 1000 --method cholesky --png "" --json
expect 0 "demo inverse --n 16 --steps 1000 --method cholesky"
e=$(jlast rel_l2_error)
if fcmp "$e" "<" 0.01; then ok; else fail "n 16, 1000 steps: rel_l2_error $e not below 0.01"; fi
stdout_has 'cholmod|cholesky' "direct solver report"

# A Krylov solve also works (rtol 1e-12).
run demo inverse --n 16 --steps 5 --method cg --png '' --json
expect 0 "demo inverse --method cg"
stdout_has 'iterations' "Krylov progress header"

# ---- the gradient against finite differences --------------------------------
run demo inverse --check-grad
expect 0 "demo inverse --check-grad"
stdout_has 'gradient check: OK' "--check-grad"
run demo inverse --check-grad --n 24 --seed 7 --alpha 1e-3 --json
expect 0 "demo inverse --check-grad --json"
if tail -n 1 "$OUT" | grep -q '"check_grad":true'; then ok; else fail "--check-grad --json"; fi

cli_finish test_demo
