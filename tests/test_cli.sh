#!/usr/bin/env bash
# End-to-end tests of the command-line tool.
#   bash test_cli.sh <path-to-sla> <test-data-dir>
# Every check runs the real binary (under ASan in the sanitizer build, where
# a leak or a memory error changes the exit status and fails the check).
set -u

SLA=${1:?usage: test_cli.sh <path-to-sla> <test-data-dir>}
DATA=${2:?usage: test_cli.sh <path-to-sla> <test-data-dir>}
. "$(dirname "$0")/cli_lib.sh"
cli_init sla-cli

A=$tmp/A.mtx
C=$tmp/C.mtx

# ---- help, version, command errors -------------------------------------
run --version;            expect 0 "--version"; stdout_has '^sla [0-9]+\.[0-9]+\.[0-9]+' "--version"
run --help;               expect 0 "--help"; stdout_has 'solve' "--help"
for c in solve gen info demo; do
    run "$c" --help;      expect 0 "$c --help"; stdout_has "usage: sla $c" "$c --help"
done
run;                      expect 2 "no command"
run solv A.mtx;           expect 2 "unknown command"; stderr_has "did you mean solve" "unknown command"
run --frobnicate;         expect 2 "unknown top-level option"

# ---- methods: the registry (sla_method_at) --------------------------------
run methods --help;       expect 0 "methods --help"; stdout_has "usage: sla methods" "methods --help"
run methods;              expect 0 "methods"
stdout_has '^cg +krylov +available' "methods lists cg"
stdout_has '^cholesky +direct +(available|unavailable)' "methods lists cholesky (or says unavailable)"
stdout_has '^ilu0 +precond +available' "methods lists ilu0"
stdout_has 'aliases: cholmod' "methods shows aliases"
stdout_has '^cocg +krylov +available +symmetric transpose complex' "methods lists cocg"
run solve --help;         expect 0 "solve --help"
stdout_has 'minres\|cocg\|cholesky' "solve --help lists cocg"
run methods --json;       expect 0 "methods --json"
if /usr/bin/python3 -c 'import json,sys; json.load(sys.stdin)' <"$OUT"; then ok; else
    fail "methods --json: not valid JSON"; fi
if /usr/bin/python3 -c '
import json, sys
rows = {r["name"]: r for r in json.load(sys.stdin)}
assert rows["cg"]["kind"] == "krylov" and rows["cg"]["available"] is True
assert "distributed" in rows["cg"]["capabilities"]
assert rows["cholesky"]["kind"] == "direct" and rows["cholesky"]["aliases"] == ["cholmod"]
assert rows["ilu0"]["kind"] == "precond" and rows["ilu0"]["summary"]
' <"$OUT"; then ok; else fail "methods --json: rows cg, cholesky, ilu0"; fi
run methods --frobnicate; expect 2 "methods unknown flag"; stderr_has "unknown option" "methods unknown flag"
run methods cg;           expect 2 "methods with an argument"

# ---- gen + info ----------------------------------------------------------
run gen poisson2d 8 -o "$A";  expect 0 "gen poisson2d 8"
run info "$A" --json;         expect 0 "info --json"; one_json_object "info --json"
jeq n 64 "info poisson2d 8"; jeq m 64 "info poisson2d 8"; jeq ncols 64 "info poisson2d 8"; jeq nnz 288 "info poisson2d 8"
jeq symmetric true "info poisson2d 8"; jeq structurally_symmetric true "info poisson2d 8"
jeq positive_diagonal true "info poisson2d 8"; jeq diagonally_dominant true "info poisson2d 8"
run info "$A";                expect 0 "info (text)"; stdout_has 'nnz 288' "info (text)"

check_gen() { # KIND N N_ROWS NNZ SYMMETRIC [extra args]
    local kind=$1 N=$2 n=$3 nnz=$4 sym=$5
    shift 5
    run gen "$kind" "$N" -o "$tmp/g.mtx" "$@"; expect 0 "gen $kind $N $*"
    run info "$tmp/g.mtx" --json;              expect 0 "info on gen $kind"
    jeq n "$n" "gen $kind $N"; jeq symmetric "$sym" "gen $kind $N"
    [ -z "$nnz" ] || jeq nnz "$nnz" "gen $kind $N"
}
check_gen poisson1d 10 10 28 true
check_gen poisson3d 4 64 352 true
check_gen diffusion2d 8 64 288 true
check_gen convdiff2d 8 64 288 false
check_gen convdiff2d 8 64 288 false --bx 50 --by -20
check_gen aniso2d 8 64 288 true --eps 0.001
check_gen random 50 50 '' true --seed 7 --kind spd
# arrowhead: (100 - 4) body rows of 2*2 + 1 band entries (6 clipped) and 4 border columns, 4 dense rows
check_gen arrow 100 100 1258 false --dense 4 --band 2 --seed 3
run gen arrow 100 -o "$tmp/g.mtx" --per-row 3; expect 2 "gen --per-row on arrow"; stderr_has 'random only' "gen --per-row on arrow"
run gen random 50 -o "$tmp/g.mtx" --dense 3;   expect 2 "gen --dense on random"; stderr_has 'arrow only' "gen --dense on random"
# diffusion2d with kappa = 1 is poisson2d.
run gen diffusion2d 8 -o "$tmp/d1.mtx" --kappa-const 1; expect 0 "gen diffusion2d --kappa-const"
if cmp -s <(grep -v '^%' "$tmp/d1.mtx") <(grep -v '^%' "$A"); then ok; else
    fail "diffusion2d with kappa = 1 differs from poisson2d"; fi
run gen poisson2d 8;                 expect 2 "gen without -o"
run gen poisson9d 8 -o "$tmp/g.mtx"; expect 2 "gen unknown kind"; stderr_has 'poisson[0-9]d' "gen unknown kind"
run gen poisson2d 8x -o "$tmp/g.mtx"; expect 2 "gen bad N"
run gen poisson2d 0 -o "$tmp/g.mtx";  expect 2 "gen N = 0"
run gen aniso2d 8 -o "$tmp/g.mtx" --eps abc; expect 2 "gen bad --eps"; stderr_has 'abc' "gen bad --eps"
run gen poisson2d 8 -o "$tmp/g.mtx" --eps 0.1; expect 2 "gen --eps on poisson2d"

# ---- solve: defaults and JSON --------------------------------------------
run solve "$A" --json;  expect 0 "solve --json"; one_json_object "solve --json"
jeq n 64 "solve --json"; jeq nnz 288 "solve --json"; jeq converged true "solve --json"
jeq reason converged_rtol "solve --json"
case "$(jget method)" in cholesky|cg) ok ;; *) fail "solve --json (auto on SPD): method $(jget method)" ;; esac
for k in backend precond iterations residual setup_seconds solve_seconds; do
    if [ -n "$(jget $k)" ]; then ok; else fail "solve --json: no \"$k\""; fi
done
if grep -q '"adjoint"' "$OUT"; then fail "solve --json: adjoint object without --adjoint"; else ok; fi
# accuracy first: a small matrix is factored and refined (backward error reported);
# --auto-direct-seconds 0 leaves it to the cost model (plain CG here)
jeq method cholesky "auto on a small SPD matrix (accuracy first)"
if [ -n "$(jget backward_error)" ]; then ok; else fail "solve --json: no backward_error for a direct solve"; fi
run solve "$A" --auto-direct-seconds 0 --json; expect 0 "--auto-direct-seconds 0"
jeq method cg "--auto-direct-seconds 0 on poisson2d 8"
run solve "$A" --auto-direct-seconds -1; expect 2 "--auto-direct-seconds -1"
# no false refusal: KLU refuses bayer10's rounding-level pivot, UMFPACK solves it
run solve "$DATA/bayer10.mtx" --json; expect 0 "auto on bayer10"
jeq method umfpack "auto on bayer10"; stdout_has 'klu refused' "auto on bayer10: the note names the retry"
run solve "$DATA/bayer10.mtx" --method klu; expect 2 "explicit klu on bayer10 refuses"
run solve "$DATA/dwt_878.mtx"; expect 2 "auto on the singular dwt_878"; stderr_has 'singular' "dwt_878"
if grep -q '"hierarchy"' "$OUT"; then fail "solve --json: a hierarchy without saamg"; else ok; fi
# saamg: the hierarchy (levels, rows, nnz per level, complexities) in the report
H=$tmp/H.mtx
run gen poisson2d 60 -o "$H"; expect 0 "gen poisson2d 60"
run solve "$H" --method cg --precond saamg --json; expect 0 "solve saamg --json"
if /usr/bin/python3 -c '
import json, sys
h = json.load(sys.stdin)["hierarchy"]
L = h["levels"]
assert L >= 2 and len(h["rows"]) == L and len(h["nnz"]) == L and len(h["p_nnz"]) == L
assert h["rows"][0] == 3600 and h["nnz"][0] == 17760 and h["p_nnz"][-1] == 0
assert all(h["rows"][l + 1] < h["rows"][l] for l in range(L - 1))
assert abs(h["operator_complexity"] - sum(h["nnz"]) / h["nnz"][0]) < 1e-3
assert abs(h["grid_complexity"] - sum(h["rows"]) / h["rows"][0]) < 1e-3
assert h["coarse_direct"] is True
' <"$OUT"; then ok; else fail "solve saamg --json: hierarchy"; fi
run solve "$H" --method cg --precond saamg; expect 0 "solve saamg (text)"
stdout_has 'hierarchy: [0-9]+ levels, operator complexity' "solve saamg (text): hierarchy"
stdout_has 'level 0: 3600 rows, 17760 nonzeros' "solve saamg (text): level 0"
run solve "$A";         expect 0 "solve (text)"; stdout_has 'iterations [0-9]+' "solve (text)"
stdout_has 'converged_rtol' "solve (text)"
run solve "$A" --json --rtol=1e-12 --threads 2 --atol 0; expect 0 "--opt=value, --threads"
jeq converged true "--rtol=1e-12"

# Every method with suitable preconditioners.
run gen poisson2d 12 -o "$A"; expect 0 "gen poisson2d 12"
write_array "$tmp/wd.mtx" 144 1 '(i % 3) - 0.5'
for mp in cg:none cg:jacobi cg:ic0 cg:ssor minres:none minres:jacobi minres:ic0 minres:ssor \
          auto:ic0 gmres:ilu0 bicgstab:ilu0 gmres:jacobi bicgstab:none; do
    m=${mp%%:*}; p=${mp##*:}
    run solve "$A" --method "$m" --precond "$p" --json
    expect 0 "poisson2d $m+$p"; jeq converged true "poisson2d $m+$p"; jeq precond "$p" "poisson2d $m+$p"
    [ "$m" = auto ] || jeq method "$m" "poisson2d $m+$p"
done
run solve "$A" --method cg --precond ssor --omega 1.5 --json; expect 0 "ssor --omega 1.5"
run solve "$A" --method cg --precond amg --json --adjoint "$tmp/wd.mtx"
if [ "$rc" -eq 2 ] && grep -qi "amg is not available in this build" "$ERR"; then
    ok; echo "SKIP: cg+amg: this build has no hypre (precond amg unavailable)"
else
    expect 0 "cg+amg"; jeq precond amg "cg+amg"; jeq converged true "cg+amg"
    [ "$(jget_adj converged)" = true ] && ok || fail "cg+amg: adjoint not converged"
fi
run gen convdiff2d 12 -o "$C"; expect 0 "gen convdiff2d 12"
for mp in gmres:ilu0 bicgstab:ilu0 gmres:none bicgstab:jacobi auto:ilu0; do
    m=${mp%%:*}; p=${mp##*:}
    run solve "$C" --method "$m" --precond "$p" --json
    expect 0 "convdiff2d $m+$p"; jeq converged true "convdiff2d $m+$p"
done
jeq method gmres "auto on a nonsymmetric matrix"
run solve "$C" --method gmres --restart 5 --json; expect 0 "gmres --restart 5"

# Direct methods: the JSON names the library; the adjoint reuses the factor.
for mb in cholesky:cholmod ldlt:cholmod lu:umfpack umfpack:umfpack klu:klu superlu:superlu; do
    m=${mb%%:*}; b=${mb##*:}
    run solve "$A" --method "$m" --json --adjoint "$tmp/wd.mtx" --grad-A "$tmp/gA_$m.mtx"
    expect 0 "poisson2d $m"; jeq backend "$b" "poisson2d $m"; jeq method "$m" "poisson2d $m"
    jeq converged true "poisson2d $m"
    [ "$(jget_adj converged)" = true ] && ok || fail "$m: adjoint not converged"
done
for m in lu klu superlu; do
    run solve "$C" --method "$m" --json; expect 0 "convdiff2d $m"; jeq converged true "convdiff2d $m"
done
run solve "$C" --json; expect 0 "auto on convdiff2d"
case "$(jget method)" in lu|klu|gmres) ok ;; *) fail "auto on convdiff2d: method $(jget method)" ;; esac
run solve "$A" --method cholesky --ordering metis --json; expect 0 "--ordering metis"
jeq ordering metis "--ordering metis"
run solve "$C" --method cholesky --json; expect 2 "cholesky on a nonsymmetric matrix"
run solve "$A" --method cholesky --ordering amdd; expect 2 "bad --ordering"; stderr_has 'amd' "bad --ordering"

# Not converged: exit 3, JSON still printed.
run solve "$A" --method cg --maxiter 2 --json; expect 3 "--maxiter 2"; one_json_object "--maxiter 2"
jeq converged false "--maxiter 2"; jeq reason diverged_maxiter "--maxiter 2"; jeq iterations 2 "--maxiter 2"
run solve "$A" --method cg --maxiter 2;        expect 3 "--maxiter 2 (text)"; stderr_has 'converge' "--maxiter 2 (text)"

# --verbose prints the residual while solving (cg, no preconditioner, > 100 iterations).
run gen poisson2d 100 -o "$tmp/big.mtx"; expect 0 "gen poisson2d 100"
run solve "$tmp/big.mtx" --method cg --verbose --rtol 1e-10; expect 0 "--verbose"
stderr_has 'iteration [0-9]+ +residual' "--verbose"

# ---- --out, --rhs --------------------------------------------------------
run solve "$A" --out "$tmp/x.mtx" --rtol 1e-12; expect 0 "--out"
[ "$(mm_size "$tmp/x.mtx")" = "144 1" ] && ok || fail "--out: size line '$(mm_size "$tmp/x.mtx")'"
[ "$(mm_entries "$tmp/x.mtx")" = 144 ] && ok || fail "--out: $(mm_entries "$tmp/x.mtx") entries"
# b = A * ones, so x = ones.
if grep -v '^%' "$tmp/x.mtx" | sed 1d | awk '{ d = $1 - 1; if (d < 0) d = -d; if (d > 1e-8) bad++ } END { exit bad > 0 }'; then
    ok; else fail "--out: x is not ones for b = A*1"; fi

write_array "$tmp/b2.mtx" 144 2 'j == 1 ? 1 : i % 7'
run solve "$A" --rhs "$tmp/b2.mtx" --out "$tmp/x2.mtx" --json; expect 0 "--rhs with 2 columns"
[ "$(mm_size "$tmp/x2.mtx")" = "144 2" ] && ok || fail "--rhs 2 columns: x size '$(mm_size "$tmp/x2.mtx")'"

# ---- --adjoint -----------------------------------------------------------
write_array "$tmp/b.mtx" 144 1 '1 + (i % 5)'
write_array "$tmp/w.mtx" 144 1 '(i % 3) - 0.5'
run solve "$A" --rhs "$tmp/b.mtx" --out "$tmp/x.mtx" --rtol 1e-12 --adjoint "$tmp/w.mtx" \
    --grad-b "$tmp/gb.mtx" --grad-A "$tmp/gA.mtx" --json
expect 0 "--adjoint"; one_json_object "--adjoint"
if grep -q '"adjoint": *{' "$OUT"; then ok; else fail "--adjoint: no adjoint object"; fi
[ "$(jget_adj converged)" = true ] && ok || fail "--adjoint: adjoint not converged"
for k in iterations residual seconds; do
    [ -n "$(jget_adj $k)" ] && ok || fail "--adjoint: no adjoint \"$k\""
done
[ "$(mm_size "$tmp/gb.mtx")" = "144 1" ] && ok || fail "--grad-b: size '$(mm_size "$tmp/gb.mtx")'"
[ "$(mm_entries "$tmp/gb.mtx")" = 144 ] && ok || fail "--grad-b: $(mm_entries "$tmp/gb.mtx") entries"
[ "$(mm_size "$tmp/gA.mtx")" = "144 144 672" ] && ok || fail "--grad-A: size '$(mm_size "$tmp/gA.mtx")'"
[ "$(mm_entries "$tmp/gA.mtx")" = 672 ] && ok || fail "--grad-A: $(mm_entries "$tmp/gA.mtx") entries"
grep -qi '^%%MatrixMarket matrix coordinate' "$tmp/gA.mtx" && ok || fail "--grad-A: not coordinate"
# w . x = (A^-T w) . b = gb . b  (L is linear in b).
if awk 'FNR == 1 { f++ } /^%/ { next } { k[f]++ } k[f] > 1 { v[f, k[f] - 1] = $1 }
        END { for (i = 1; i < k[1]; i++) { wx += v[1, i] * v[2, i]; gbb += v[3, i] * v[4, i] }
              d = wx - gbb; if (d < 0) d = -d; s = wx < 0 ? -wx : wx
              exit !(k[1] == 145 && d <= 1e-8 * s) }' \
        "$tmp/w.mtx" "$tmp/x.mtx" "$tmp/gb.mtx" "$tmp/b.mtx"; then ok; else
    fail "--adjoint: w.x != dL/db . b"; fi
# dL/dA_ij = -gb_i x_j on every stored entry.
if awk 'FNR == 1 { f++ } /^%/ { next } { k[f]++ }
        f <= 2 && k[f] > 1 { v[f, k[f] - 1] = $1 }
        f == 3 && k[f] > 1 { want = -v[2, $1] * v[1, $2]; d = $3 - want; if (d < 0) d = -d
                             s = want < 0 ? -want : want; if (d > 1e-12 + 1e-9 * s) bad++; n3++ }
        END { exit !(bad == 0 && n3 == 672) }' \
        "$tmp/x.mtx" "$tmp/gb.mtx" "$tmp/gA.mtx"; then ok; else
    fail "--adjoint: dL/dA != -gb x^T on the pattern"; fi
# The gradients are optional individually.
rm -f "$tmp/gb.mtx" "$tmp/gA.mtx"
run solve "$A" --adjoint "$tmp/w.mtx" --grad-A "$tmp/gA.mtx"; expect 0 "--grad-A alone"
[ -f "$tmp/gA.mtx" ] && [ ! -f "$tmp/gb.mtx" ] && ok || fail "--grad-A alone: wrong files"
stdout_has 'adjoint' "--adjoint (text)"
# The adjoint runs even when the forward solve stopped at maxiter.
run solve "$A" --method cg --maxiter 2 --adjoint "$tmp/w.mtx" --json; expect 3 "--adjoint --maxiter 2"
[ "$(jget_adj converged)" = false ] && ok || fail "--adjoint --maxiter 2: adjoint converged?"
# Symmetric expansion: dL/dA covers the full stored pattern.
write_array "$tmp/w48.mtx" 48 1 1
run solve "$DATA/bcsstk01.mtx" --method cg --precond ic0 --adjoint "$tmp/w48.mtx" \
    --grad-A "$tmp/gA1.mtx"; expect 0 "bcsstk01 --adjoint"
[ "$(mm_entries "$tmp/gA1.mtx")" = 400 ] && ok || fail "bcsstk01 --grad-A: $(mm_entries "$tmp/gA1.mtx") entries, expected 400"

# ---- bad input: exit 2 with a message ------------------------------------
run solve "$tmp/nonexistent.mtx";  expect 2 "missing file"; stderr_has 'nonexistent\.mtx' "missing file"
run info "$tmp/nonexistent.mtx";   expect 2 "info missing file"

printf '%%%%MatrixMarket matrix coordinate real general\n3 3 3\n1 1 1.0\n2 x 3\n3 3 1\n' >"$tmp/broken.mtx"
run solve "$tmp/broken.mtx";       expect 2 "malformed file"; stderr_has 'broken\.mtx' "malformed file"
stderr_has ':4' "malformed file names the line"
printf '%%%%MatrixMarket matrix coordinate real general\n3 3 3\n1 1 1.0\n2 2 1.0\n' >"$tmp/short.mtx"
run solve "$tmp/short.mtx";        expect 2 "truncated file"; stderr_has 'short\.mtx' "truncated file"
printf 'hello world\n' >"$tmp/garbage.mtx"
run info "$tmp/garbage.mtx";       expect 2 "not a Matrix Market file"
printf '%%%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 nan\n2 2 1\n' >"$tmp/nan.mtx"
run solve "$tmp/nan.mtx";          expect 2 "NaN in file"
printf '%%%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1\n3 2 1\n' >"$tmp/idx.mtx"
run solve "$tmp/idx.mtx";          expect 2 "index out of range"; stderr_has 'idx\.mtx' "index out of range"
printf '%%%%MatrixMarket matrix coordinate real general\n3 4 3\n1 1 1\n2 2 1\n3 4 1\n' >"$tmp/rect.mtx"
run solve "$tmp/rect.mtx";         expect 2 "non-square matrix"; stderr_has 'square' "non-square matrix"
run info "$tmp/rect.mtx" --json;   expect 0 "info on non-square"; jeq m 3 "info non-square"; jeq n 4 "info non-square"
jeq nrows 3 "info non-square"; jeq ncols 4 "info non-square"; jeq square false "info non-square"
# Zero diagonal: unusable with Jacobi.
printf '%%%%MatrixMarket matrix coordinate real general\n3 3 4\n1 2 1\n2 1 1\n2 2 4\n3 3 4\n' >"$tmp/zd.mtx"
run solve "$tmp/zd.mtx" --precond jacobi; expect 2 "zero diagonal with jacobi"; stderr_has '.' "zero diagonal message"

write_array "$tmp/b10.mtx" 10 1 1
run solve "$A" --rhs "$tmp/b10.mtx";  expect 2 "rhs of wrong length"; stderr_has 'b10\.mtx' "rhs of wrong length"
run solve "$A" --adjoint "$tmp/b10.mtx"; expect 2 "adjoint seed of wrong length"
run solve "$A" --rhs "$tmp/broken.mtx"; expect 2 "malformed rhs"
run solve "$A" --rtoll 1e-6;          expect 2 "unknown option"; stderr_has -- '--rtol' "unknown option names --rtol"
run solve "$A" --precon ic0;          expect 2 "unknown option"; stderr_has -- '--precond' "unknown option names --precond"
run solve "$A" --method cgg;          expect 2 "unknown method"; stderr_has 'cg' "unknown method"
run solve "$A" --precond ilu;         expect 2 "unknown precond"; stderr_has 'ilu0' "unknown precond"
run solve "$A" --rtol abc;            expect 2 "bad number"; stderr_has 'abc' "bad number"
run solve "$A" --rtol 1e-8x;          expect 2 "number with trailing junk"
run solve "$A" --rtol '';             expect 2 "empty number"
run solve "$A" --rtol -1;             expect 2 "negative rtol"
run solve "$A" --maxiter 10.5;        expect 2 "non-integer maxiter"
run solve "$A" --maxiter -3;          expect 2 "negative maxiter"
run solve "$A" --maxiter 99999999999999999999; expect 2 "overflowing maxiter"
run solve "$A" --omega 2.5;           expect 2 "omega out of range"
run solve "$A" --threads x;           expect 2 "bad --threads"
run solve "$A" --rtol;                expect 2 "missing value"
run solve "$A" --json=1;              expect 2 "flag with a value"
run solve "$A" --grad-b "$tmp/gb.mtx"; expect 2 "--grad-b without --adjoint"
run solve;                            expect 2 "solve without a matrix"
run solve "$A" "$A";                  expect 2 "solve with two matrices"
run solve "$A" --rtol abc --json;     expect 2 "bad number with --json"
[ -s "$OUT" ] && fail "bad number with --json: stdout not empty" || ok

# ---- real matrices -------------------------------------------------------
run solve "$DATA/bcsstk01.mtx" --method cg --precond ic0 --json; expect 0 "bcsstk01 cg+ic0"
jeq converged true "bcsstk01 cg+ic0"; jeq n 48 "bcsstk01"
run info "$DATA/bcsstk01.mtx" --json; expect 0 "info bcsstk01"; jeq symmetric true "info bcsstk01"
run solve "$DATA/cage5.mtx" --method gmres --precond ilu0 --json; expect 0 "cage5 gmres+ilu0"
jeq converged true "cage5 gmres+ilu0"
run solve "$DATA/cage5.mtx" --method bicgstab --precond ilu0 --json; expect 0 "cage5 bicgstab+ilu0"
# Zero diagonals (west0067 stores 2 of 67): ilu0 shifts its pivots and says so in
# the note, ilut pivots; --ilu-shift off restores the refusal.
run solve "$DATA/west0067.mtx" --method gmres --precond ilu0 --restart 50 --rtol 1e-10 --json
expect 0 "west0067 gmres+ilu0 (shift)"; jeq converged true "west0067 gmres+ilu0"
stdout_has 'ILU.0.: shifted 61 zero/tiny pivots' "west0067 ilu0 note"
for m in gmres bicgstab; do
    run solve "$DATA/west0067.mtx" --method $m --precond ilut --rtol 1e-10 --json
    expect 0 "west0067 $m+ilut"; jeq precond ilut "west0067 $m+ilut"; jeq converged true "west0067 $m+ilut"
done
run solve "$DATA/west0497.mtx" --method gmres --precond ilut --ilut-droptol 1e-3 --ilut-fill 5 --ilut-pivot 0.5 --json
expect 0 "west0497 gmres+ilut with options"
run solve "$DATA/west0067.mtx" --method gmres --precond ilu0 --ilu-shift off
expect 2 "west0067 ilu0 --ilu-shift off"; stderr_has 'zero diagonal at row 0' "--ilu-shift off message"
run solve "$A" --ilu-shift maybe;   expect 2 "--ilu-shift maybe"
run solve "$A" --ilut-fill -1;      expect 2 "--ilut-fill -1"
run solve "$A" --ilut-pivot 2;      expect 2 "--ilut-pivot 2"
run info "$DATA/cage5.mtx" --json;    expect 0 "info cage5"; jeq symmetric false "info cage5"
run lsqr "$DATA/qc324.mtx";          expect 2 "complex matrix (lsqr has no complex path)"; stderr_has "complex" "complex matrix"
run solve "$DATA/qc324.mtx";          expect 0 "solve complex matrix (tests/test_cli_complex.sh)"
run info "$DATA/qc324.mtx";           expect 0 "info complex matrix (read as complex128)"
for f in "$DATA"/*.mtx; do
    case $f in *qc324*) continue ;; esac
    run info "$f" --json; expect 0 "info $(basename "$f")"; one_json_object "info $(basename "$f")"
done

# ---- reliability: a time budget, the condition estimate ------------------
run solve "$tmp/big.mtx" --method cg --rtol 1e-15 --max-seconds 0.002 --json; expect 3 "--max-seconds"
jeq reason diverged_time "--max-seconds"
run solve "$A" --max-seconds -1; expect 2 "--max-seconds -1"
run solve "$DATA/bcsstk01.mtx" --method lu --json; expect 0 "lu rcond"; stdout_has '"rcond":' "lu rcond"

# ---- output files: validated first, all written or none, atomic (issue 21) --
# Defect 4: a failing output path must not destroy the outputs before it.
P=$tmp/p10.mtx
run gen poisson2d 10 -o "$P"; expect 0 "gen poisson2d 10"
write_array "$tmp/w100.mtx" 100 1 1
echo PRECIOUS >"$tmp/keep_x.mtx"; echo PRECIOUS >"$tmp/keep_gb.mtx"
run solve "$P" --out "$tmp/keep_x.mtx" --adjoint "$tmp/w100.mtx" --grad-b "$tmp/keep_gb.mtx" \
    --grad-A "$tmp/nodir/gA.mtx"
expect 2 "--grad-A in a missing folder"; stderr_has 'nodir' "--grad-A in a missing folder"
still_precious() { # FILE DESCRIPTION
    if [ "$(cat "$1" 2>/dev/null)" = PRECIOUS ]; then ok; else fail "$2: $1 was changed"; fi
}
still_precious "$tmp/keep_x.mtx" "failed --grad-A"; still_precious "$tmp/keep_gb.mtx" "failed --grad-A"
if [ -s "$OUT" ]; then fail "failed --grad-A: something on stdout"; else ok; fi
# the paths are checked before any work: a directory, a missing folder
run solve "$P" --out "$tmp";                 expect 2 "--out is a directory"
run gen poisson2d 4 -o "$tmp/nodir/A.mtx";   expect 2 "gen -o in a missing folder"
run eigsh "$P" -k 2 --out "$tmp/nodir/V.mtx"; expect 2 "eigsh --out in a missing folder"
run logdet "$P" --grad-A "$tmp/nodir/g.mtx"; expect 2 "logdet --grad-A in a missing folder"
# Defect 5 / section 11: the same file twice, or an input as an output
cp "$P" "$tmp/in.mtx"; cp "$tmp/in.mtx" "$tmp/in.orig"
run solve "$tmp/in.mtx" --out "$tmp/in.mtx"; expect 2 "--out = the matrix"
stderr_has 'same file' "--out = the matrix"
cmp -s "$tmp/in.mtx" "$tmp/in.orig" && ok || fail "--out = the matrix: input changed"
run solve "$P" --out "$tmp/w100.mtx" --adjoint "$tmp/w100.mtx"; expect 2 "--out = the adjoint seed"
run solve "$P" --adjoint "$tmp/w100.mtx" --out "$tmp/xx.mtx" --grad-b "$tmp/./xx.mtx"
expect 2 "--out = --grad-b (a new file)"; stderr_has 'same file' "--out = --grad-b"
[ -e "$tmp/xx.mtx" ] && fail "--out = --grad-b: a file was written" || ok
ln -s in.mtx "$tmp/link.mtx"
run eigsh "$tmp/in.mtx" -k 2 --out "$tmp/link.mtx"; expect 2 "eigsh --out = the matrix through a link"
cmp -s "$tmp/in.mtx" "$tmp/in.orig" && ok || fail "eigsh --out through a link: input changed"
run logdet "$tmp/in.mtx" --grad-A "$tmp/in.mtx"; expect 2 "logdet --grad-A = the matrix"
# ENOSPC: /dev/full fails cleanly, and the other outputs keep their contents
if [ -w /dev/full ]; then
    run solve "$P" --out /dev/full; expect 2 "--out /dev/full"; stderr_has 'space' "--out /dev/full"
    run solve "$P" --adjoint "$tmp/w100.mtx" --out "$tmp/keep_x.mtx" --grad-b /dev/full
    expect 2 "--grad-b /dev/full"; still_precious "$tmp/keep_x.mtx" "--grad-b /dev/full"
    ln -s /dev/full "$tmp/full.mtx"
    run gen poisson2d 30 -o "$tmp/full.mtx"; expect 2 "gen -o a link to /dev/full"
    [ -L "$tmp/full.mtx" ] && ok || fail "gen -o a link to /dev/full: the link was replaced"
    run eigsh "$P" -k 2 --out /dev/full; expect 2 "eigsh --out /dev/full"
fi
# atomic replacement: a link to a regular file stays a link, its target is
# replaced, no temporary file is left, the mode of the old file is kept
echo PRECIOUS >"$tmp/real_x.mtx"; chmod 640 "$tmp/real_x.mtx"; ln -s real_x.mtx "$tmp/xlink.mtx"
run solve "$P" --out "$tmp/xlink.mtx"; expect 0 "--out through a link"
[ -L "$tmp/xlink.mtx" ] && ok || fail "--out through a link: the link was replaced"
[ "$(mm_size "$tmp/real_x.mtx")" = "100 1" ] && ok || fail "--out through a link: target not written"
[ "$(stat -c %a "$tmp/real_x.mtx")" = 640 ] && ok || fail "--out: mode $(stat -c %a "$tmp/real_x.mtx"), expected 640"
ls -a "$tmp" | grep -q 'sla-' && fail "a temporary file was left: $(ls -a "$tmp" | grep sla-)" || ok
# a write that fails part way (file size limit, EFBIG, standing in for a full
# disk) leaves the old file and no temporary file
echo PRECIOUS >"$tmp/keep_big.mtx"
LAST_CMD="(ulimit -f 8; sla gen poisson2d 100 -o keep_big.mtx)"
( trap '' XFSZ; ulimit -f 8; "$SLA" gen poisson2d 100 -o "$tmp/keep_big.mtx" ) >"$OUT" 2>"$ERR"; rc=$?
expect 2 "gen past the file size limit"; stderr_has 'keep_big\.mtx.*(too large|File too large)' "gen past the file size limit"
still_precious "$tmp/keep_big.mtx" "gen past the file size limit"
ls -a "$tmp" | grep -q 'sla-' && fail "EFBIG: a temporary file was left: $(ls -a "$tmp" | grep sla-)" || ok
LAST_CMD="(ulimit -f 8; sla solve --out keep_x2 --adjoint --grad-A keep_gA)"
echo PRECIOUS >"$tmp/keep_x2.mtx"; echo PRECIOUS >"$tmp/keep_gA.mtx"
( trap '' XFSZ; ulimit -f 8; "$SLA" solve "$P" --out "$tmp/keep_x2.mtx" --adjoint "$tmp/w100.mtx" \
    --grad-A "$tmp/keep_gA.mtx" ) >"$OUT" 2>"$ERR"; rc=$?
expect 2 "solve --grad-A past the file size limit"
still_precious "$tmp/keep_x2.mtx" "--grad-A past the file size limit (all or none)"
still_precious "$tmp/keep_gA.mtx" "--grad-A past the file size limit"
# SIGINT while a big file is written: the old file or the new one, whole
"$SLA" gen poisson2d 200 -o "$tmp/sig.mtx" -q
for delay in 0.05 0.2; do
    "$SLA" gen poisson2d 400 -o "$tmp/sig.mtx" -q & pid=$!
    sleep "$delay"; kill -INT "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
    run info "$tmp/sig.mtx" --json; expect 0 "SIGINT after ${delay}s: the file reads"
    case $(jget nnz) in 198400|798400) ok ;; *) fail "SIGINT after ${delay}s: nnz '$(jget nnz)'" ;; esac
    ls -a "$tmp" | grep -q 'sla-' && fail "SIGINT: a temporary file was left" || ok
done
# JSON names: any byte sequence gives valid UTF-8 JSON (strict decoder)
if command -v python3 >/dev/null; then
    for nm in $'\xc0\x80' $'\xed\xa0\x80' $'\xf5\x80' $'a\xe2\x82' $'\xf0\x9f\x98\x80' $'\xe2\x82\xac\x80'; do
        cp "$P" "$tmp/n$nm.mtx"
        run info "$tmp/n$nm.mtx" --json; expect 0 "info odd name"
        if python3 -c 'import json, sys; json.loads(open(sys.argv[1], "rb").read().decode("utf-8", "strict"))' "$OUT"
        then ok; else fail "info odd name: not valid UTF-8 JSON"; fi
        rm -f "$tmp/n$nm.mtx"
    done
fi
# two processes writing one file: the result is one of the two, whole
for round in 1 2; do
    "$SLA" gen poisson2d 300 -o "$tmp/same.mtx" -q & pid=$!
    "$SLA" gen aniso2d 280 -o "$tmp/same.mtx" -q; wait "$pid"
    run info "$tmp/same.mtx" --json; expect 0 "two writers, round $round"
    case $(jget nnz) in 448800|390880) ok ;; *) fail "two writers: nnz '$(jget nnz)'" ;; esac
done
# a read-only existing file is not replaced
echo PRECIOUS >"$tmp/ro.mtx"; chmod 444 "$tmp/ro.mtx"
if [ ! -w "$tmp/ro.mtx" ]; then
    run solve "$P" --out "$tmp/ro.mtx"; expect 2 "--out a read-only file"; still_precious "$tmp/ro.mtx" "--out read-only"
fi
# Defect 8 (sibling): no control characters in any output name
run solve "$P" --out "$tmp/a"$'\n'"b.mtx"; expect 2 "--out with a newline"; stderr_has 'control character' "--out with a newline"
run gen poisson2d 4 -o "$tmp/a"$'\t'"b.mtx"; expect 2 "gen -o with a tab"
run eigsh "$P" -k 2 --out "$tmp/a"$'\r'"b.mtx"; expect 2 "eigsh --out with a CR"
run logdet "$P" --grad-A "$tmp/a"$'\033'"b.mtx"; expect 2 "logdet --grad-A with an escape"
ls "$tmp" | grep -q '^a' && fail "a control-character file was written" || ok
# Defect 7: a non-finite iterate with --out keeps exit 3 and the JSON report;
# no file is written (an existing one is left as it was) and the JSON says so
printf '%s\n' '%%MatrixMarket matrix coordinate real general' '2 2 2' '1 1 4e-320' '2 2 4e-320' >"$tmp/subn.mtx"
write_array "$tmp/b11.mtx" 2 1 1
run solve "$tmp/subn.mtx" --rhs "$tmp/b11.mtx" --method cg --json --out "$tmp/keep_x.mtx"
expect 3 "non-finite x with --out"; one_json_object "non-finite x with --out"
jeq files_written false "non-finite x with --out"; stdout_has '"files_note":"[^"]*not finite' "non-finite x with --out"
still_precious "$tmp/keep_x.mtx" "non-finite x with --out"
run solve "$tmp/subn.mtx" --rhs "$tmp/b11.mtx" --method cg --json --adjoint "$tmp/b11.mtx" --grad-b "$tmp/gbn.mtx"
expect 3 "non-finite x with --adjoint"; one_json_object "non-finite x with --adjoint"
stderr_has 'not finite' "non-finite x with --adjoint"
[ -e "$tmp/gbn.mtx" ] && fail "non-finite x with --adjoint: --grad-b written" || ok
run solve "$P" --out "$tmp/x_ok.mtx" --json; expect 0 "--out --json"; jeq files_written true "--out --json"
# Section 11: a direct solve reports no preconditioner
run solve "$P" --method lu --precond jacobi --json; expect 0 "lu --precond jacobi"; jeq precond none "lu --precond jacobi"
# Section 11: non-UTF-8 file names give valid JSON (each invalid byte as \ufffd)
cp "$P" "$tmp/"$'\xff'"x.mtx"
run info "$tmp/"$'\xff'"x.mtx" --json; expect 0 "info non-UTF-8 name"
stdout_has '\\ufffdx\.mtx' "info non-UTF-8 name"
if LC_ALL=C grep -q $'\xff' "$OUT"; then fail "info non-UTF-8 name: raw byte in the JSON"; else ok; fi
cp "$P" "$tmp/é.mtx"
run info "$tmp/é.mtx" --json; expect 0 "info UTF-8 name"; stdout_has 'é\.mtx' "info UTF-8 name (kept as is)"
# Defect 9: a 60-byte file declaring 2^31-1 rows must not take tens of GB.
# Release build only (ASan ignores ulimit -v): the refusal names the memory.
printf '%s\n' '%%MatrixMarket matrix coordinate real general' '2147483647 2147483647 1' '1 1 1' >"$tmp/big.mtx"
if [ "${SLA_TEST_SANITIZE:-0}" != 1 ]; then
    LAST_CMD="(ulimit -v 4000000; sla info big.mtx)"
    ( ulimit -v 4000000; "$SLA" info "$tmp/big.mtx" ) >"$OUT" 2>"$ERR"; rc=$?
    expect 2 "2^31-1 rows under ulimit -v"; stderr_has 'needs [0-9.]+ GB.*available' "2^31-1 rows under ulimit -v"
    LAST_CMD="(ulimit -v 4000000; sla solve big.mtx)"
    ( ulimit -v 4000000; "$SLA" solve "$tmp/big.mtx" ) >"$OUT" 2>"$ERR"; rc=$?
    expect 2 "solve 2^31-1 rows under ulimit -v"
fi
# ---- scale safety (issue 21) ---------------------------------------------
printf '%s\n' '%%MatrixMarket matrix coordinate real general' '2 2 2' '1 1 2e-300' '2 2 3e-300' > "$tmp/tiny.mtx"
printf '%s\n' '%%MatrixMarket matrix coordinate real general' '2 2 2' '1 1 2' '2 2 3' > "$tmp/d.mtx"
printf '%s\n' '%%MatrixMarket matrix array real general' '2 1' 1e-170 1e-170 > "$tmp/bt.mtx"
printf '%s\n' '%%MatrixMarket matrix array real general' '2 1' 1e160 1e160 > "$tmp/bh.mtx"
awk 'BEGIN{n=50; print "%%MatrixMarket matrix coordinate real general"; print n, n, 3*n-2;
  for(i=1;i<=n;i++){print i, i, "2e300"; if(i<n){print i, i+1, "-1e300"; print i+1, i, "-1e300"}}}' > "$tmp/L300.mtx"
for m in cg minres gmres bicgstab lu auto; do
    run solve "$tmp/tiny.mtx" --method "$m" --out "$tmp/x.mtx"; expect 0 "tiny matrix, $m"
    if grep -v '^%' "$tmp/x.mtx" | sed 1d | awk '{d = $1 - 1; if (d < 0) d = -d; if (d > 1e-8) bad = 1; c++}
        END {exit !(c == 2 && !bad)}'; then ok; else fail "tiny matrix, $m: x is not 1 1"; fi
    for rhs in bt bh; do
        run solve "$tmp/d.mtx" --rhs "$tmp/$rhs.mtx" --method "$m" --json --out "$tmp/x.mtx"; expect 0 "rhs $rhs, $m"
        jeq converged true "rhs $rhs, $m"
        s=1e-170; [ $rhs = bh ] && s=1e160
        if grep -v '^%' "$tmp/x.mtx" | sed 1d | awk -v s=$s '{r = $1 / s * (NR == 1 ? 2 : 3) - 1; if (r < 0) r = -r;
            if (r > 1e-8) bad = 1; c++} END {exit !(c == 2 && !bad)}'; then ok; else fail "rhs $rhs, $m: wrong x"; fi
    done
    run solve "$tmp/L300.mtx" --method "$m" --json; expect 0 "1e300 matrix, $m"; jeq converged true "1e300 matrix, $m"
done
run solve "$tmp/L300.mtx" --method gmres --equilibrate on --json; expect 0 "--equilibrate on"
stdout_has 'equilibrated' "--equilibrate on"
run solve "$tmp/L300.mtx" --equilibrate sometimes; expect 2 "--equilibrate bad value"
run logdet "$tmp/L300.mtx" --method slq; expect 0 "slq at 1e300"
run nlsolve bratu2d 16 --mu 1e308
if grep -q 'entry -1' "$ERR"; then fail "nlsolve mu 1e308: entry -1"; else ok; fi
printf '%s\n' '%%MatrixMarket matrix coordinate real general' '2 2 3' '1 1 4' '1 2 1' '2 2 3' > "$tmp/U.mtx"
run solve "$tmp/U.mtx" --method cholesky; expect 2 "cholesky on unsymmetric"; stderr_has 'not symmetric' "cholesky on unsymmetric"
printf '%s\n' '%%MatrixMarket matrix coordinate real symmetric' '2 2 3' '1 1 1' '2 1 2' '2 2 4' > "$tmp/sing.mtx"
run logdet "$tmp/sing.mtx" --method slq; expect 2 "slq on singular"; stderr_has 'singular' "slq on singular"

# ---- demo ----------------------------------------------------------------
run demo --n 24;   expect 0 "demo --n 24"; stdout_has 'result: OK' "demo"
stdout_has 'dL/db' "demo"; stdout_has 'dL/dA' "demo"
run demo --n abc;  expect 2 "demo bad --n"

cli_finish test_cli
