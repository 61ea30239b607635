#!/usr/bin/env bash
# End-to-end tests of `sla svds` and `sla info --cond`.
#   bash test_cli_svds.sh <path-to-sla> <test-data-dir>
# Every check runs the real binary (under ASan in the sanitizer build, where
# a leak or a memory error changes the exit status and fails the check).
set -u

SLA=${1:?usage: test_cli_svds.sh <path-to-sla> <test-data-dir>}
DATA=${2:?usage: test_cli_svds.sh <path-to-sla> <test-data-dir>}
. "$(dirname "$0")/cli_lib.sh"
cli_init sla-cli-svds

# jarr KEY: the elements of the JSON array "KEY":[...] one per line.
jarr() { grep -o "\"$1\":\[[^]]*\]" "$OUT" | sed 's/^[^[]*\[//; s/\]$//' | tr ',' '\n'; }
# close A B TOL: |A - B| <= TOL * max(1, |A|, |B|)
close() { awk -v a="$1" -v b="$2" -v t="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; m = 1;
    if (a > m || -a > m) m = (a < 0 ? -a : a); if (b > m || -b > m) m = (b < 0 ? -b : b);
    exit !(d <= t * m) }'; }

L=$DATA/lp_e226.mtx
run svds --help; expect 0 "svds --help"; stdout_has "usage: sla svds" "svds --help"
run svds "$L" -k 3 --json
if [ "$rc" -eq 2 ] && grep -qi "arpack" "$ERR"; then
    ok   # a build without ARPACK says so
else
    expect 0 "svds LM"; one_json_object "svds LM"
    jeq converged true "svds LM"; jeq nconv 3 "svds LM"; jeq which LM "svds LM"; jeq m 223 "svds LM"
    jeq n 472 "svds LM"; jeq reason converged "svds LM"
    s0=$(jarr singular_values | sed -n 1p); s1=$(jarr singular_values | sed -n 2p)
    if awk -v a="$s0" -v b="$s1" 'BEGIN { exit !(a >= b && a > 1985 && a < 1986) }'; then ok
    else fail "svds LM: s = $s0, $s1 (descending, s_max ~ 1985.29)"; fi
    run svds "$L" -k 2 --which SM --json --out-u "$tmp/U.mtx" --out-v "$tmp/V.mtx"
    expect 0 "svds SM"; jeq which SM "svds SM"; jeq files_written true "svds SM --out-u --out-v"
    stdout_has '"method":"arpack shift-invert' "svds SM"
    s0=$(jarr singular_values | sed -n 1p)
    if close "$s0" 0.2173955551396293 1e-8; then ok; else fail "svds SM: s_min = $s0"; fi
    if [ "$(mm_size "$tmp/U.mtx")" = "223 2" ] && [ "$(mm_size "$tmp/V.mtx")" = "472 2" ]; then ok
    else fail "svds --out-u/--out-v sizes: $(mm_size "$tmp/U.mtx"), $(mm_size "$tmp/V.mtx")"; fi
    run svds "$L" -k 2; expect 0 "svds text"; stdout_has "223 x 472, 2 singular values \(LM\)" "svds text"
    # --transpose: the explicit A^T and the scatter give the same values (one thread: bit for bit)
    run svds "$L" -k 3 --json --transpose scatter --threads 1; expect 0 "svds --transpose scatter"
    sv_sc=$(jarr singular_values)
    run svds "$L" -k 3 --json --transpose explicit --threads 1; expect 0 "svds --transpose explicit"
    if [ "$(jarr singular_values)" = "$sv_sc" ] && [ -n "$sv_sc" ]; then ok; else fail "svds --transpose: values differ"; fi
    run svds "$L" -k 3 --transpose gather; expect 2 "svds --transpose gather"; stderr_has "explicit or scatter" "svds --transpose gather"
    run info "$L" --cond; expect 0 "info --cond"; stdout_has "cond2 +9132" "info --cond"
    run info "$L" --cond --json; expect 0 "info --cond --json"; one_json_object "info --cond --json"
    c=$(jget cond2)
    if close "$c" 9132.15 1e-5; then ok; else fail "info --cond: cond2 = $c"; fi
    # rank deficient: a repeated column
    printf '%%%%MatrixMarket matrix coordinate real general\n4 3 7\n1 1 1\n2 1 2\n3 1 3\n1 2 1\n2 2 2\n3 2 3\n4 3 1\n' > "$tmp/R.mtx"
    run info "$tmp/R.mtx" --cond --json; expect 0 "info --cond rank deficient"; jeq cond2 inf "info --cond rank deficient"
    # bad input
    run svds "$L" -k 223;          expect 2 "svds k = min(m, n)"; stderr_has 'min\(m, n\)' "svds k = min(m, n)"
    run svds "$L" -k 2 --which LA; expect 2 "svds bad which"
    run svds "$L" -k 0;            expect 2 "svds k = 0"
    run svds;                      expect 2 "svds without a file"
fi
cli_finish test_cli_svds
