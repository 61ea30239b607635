# Shared helpers of the end-to-end tests of the command-line tool
# (test_cli.sh, test_cli_eig.sh, test_cli_nl.sh, test_demo.sh). Sourced, not
# run, after the script has set SLA (the binary under test):
#   . "$(dirname "$0")/cli_lib.sh"
#   cli_init NAME        temporary folder $tmp, $OUT, $ERR, the counters
#   ... run / expect / stdout_has / jeq ... checks ...
#   cli_finish NAME      the summary line; its status is the script's
# Every check runs the real binary (under ASan in the sanitizer build, where
# a leak or a memory error changes the exit status and fails the check).
# Set CLI_SHOW=tail to show the last 20 lines of a failed run's output
# instead of the first 20.

# cli_init NAME: a fresh temporary folder $tmp (removed on exit), the files
# $OUT and $ERR of the last run, the counters $checks and $fails.
cli_init() {
    export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
    tmp=$(mktemp -d "${TMPDIR:-/tmp}/$1.XXXXXX") || exit 1
    trap 'rm -rf "$tmp"' EXIT
    fails=0
    checks=0
    OUT=$tmp/stdout
    ERR=$tmp/stderr
    rc=0
}

# cli_finish NAME: print the counts; succeeds only when nothing failed.
cli_finish() {
    echo "$1: $checks checks passed, $fails failed"
    [ "$fails" -eq 0 ]
}

# show_stream LABEL FILE: 20 lines of FILE (the first, or the last with
# CLI_SHOW=tail), each prefixed with LABEL.
show_stream() {
    if [ "${CLI_SHOW:-head}" = tail ]; then
        tail -n 20 "$2" 2>/dev/null | sed "s/^/  $1: /"
    else
        sed "s/^/  $1: /" "$2" 2>/dev/null | head -20
    fi
}

fail() {
    fails=$((fails + 1))
    echo "FAIL: $*"
    echo "  command: ${LAST_CMD:-}"
    echo "  exit status: $rc"
    show_stream stdout "$OUT"
    show_stream stderr "$ERR"
}
ok() { checks=$((checks + 1)); }

# run ARGS...: run sla, stdout/stderr to files, status in $rc.
run() {
    LAST_CMD="sla $*"
    "$SLA" "$@" >"$OUT" 2>"$ERR"
    rc=$?
}

# expect STATUS DESCRIPTION: check the last run's exit status.
expect() {
    if [ "$rc" -eq "$1" ]; then ok; else fail "$2: expected exit $1"; fi
}

# stdout_has / stderr_has REGEX DESCRIPTION (extended regex, case-insensitive)
stdout_has() { if grep -Eqi -- "$1" "$OUT"; then ok; else fail "$2: stdout lacks /$1/"; fi; }
stderr_has() { if grep -Eqi -- "$1" "$ERR"; then ok; else fail "$2: stderr lacks /$1/"; fi; }

# jget KEY [FILE]: the value of "KEY": in a one-line JSON object (first hit,
# quotes stripped). For the adjoint object, use jget_adj.
jget() {
    grep -o "\"$1\": *[^,}]*" "${2:-$OUT}" | head -n 1 | sed 's/^[^:]*: *//; s/"//g'
}
jget_adj() {
    sed 's/.*"adjoint": *{//' "$OUT" | grep -o "\"$1\": *[^,}]*" | head -n 1 |
        sed 's/^[^:]*: *//; s/"//g'
}
jeq() { # jeq KEY VALUE DESCRIPTION
    local v
    v=$(jget "$1")
    if [ "$v" = "$2" ]; then ok; else fail "$3: \"$1\" is '$v', expected '$2'"; fi
}
one_json_object() { # exactly one line, an object
    if [ "$(wc -l <"$OUT")" -eq 1 ] && grep -q '^{.*}$' "$OUT"; then ok; else
        fail "$1: stdout is not exactly one JSON object"
    fi
}

# mm_entries FILE: the number of data lines (not comments, not the size line).
mm_entries() { grep -v '^%' "$1" | sed 1d | grep -c .; }
# mm_size FILE: the size line.
mm_size() { grep -v '^%' "$1" | head -n 1 | tr -s ' \t' ' ' | sed 's/^ //; s/ $//'; }

# write_array FILE ROWS COLS VALUE-EXPR: an array Matrix Market file whose
# entry (i, j) (1-based, column-major) is awk's VALUE-EXPR.
write_array() {
    awk -v r="$2" -v c="$3" "BEGIN {
        print \"%%MatrixMarket matrix array real general\"
        print r, c
        for (j = 1; j <= c; j++) for (i = 1; i <= r; i++) printf \"%.17g\\n\", $4
    }" >"$1"
}
