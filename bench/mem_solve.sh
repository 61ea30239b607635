#!/bin/sh
# Peak resident memory of `sla solve A.mtx --method cg --precond saamg` on
# 2D Poisson files against the library's own footprint (the same matrix
# made in memory and solved the same way), and of the Matrix Market reader
# alone (the two-pass reader of sla_mm_read, and the one-pass COO path a
# pipe goes through), in bytes per unknown. Prints a table, then the same
# rows as JSON lines; writes nothing else (bench/RESULTS.md is not touched).
#
#   bench/mem_solve.sh [BUILD_DIR] [N ...]       default: build, N = 1000 2000
#                                               (1e6 and 4e6 unknowns)
#   SLA_OLD=/path/to/older/sla bench/mem_solve.sh   adds that binary's
#                                               `sla solve` row, for a before/after
#   METHOD=cg PRECOND=saamg                     the solver (defaults shown)
#
# Peak RSS is /usr/bin/time's "maximum resident set size" (or the
# program's own getrusage): it does not depend on the load of the machine;
# the seconds do. The files go to $TMPDIR (about 85 MB per 1e6 unknowns)
# and are removed at the end.
set -eu

BUILD=${1:-build}
[ $# -gt 0 ] && shift
SIZES=${*:-1000 2000}
METHOD=${METHOD:-cg}
PRECOND=${PRECOND:-saamg}
SLA=$BUILD/bin/sla
DRV=$BUILD/bin/sla_bench_mem_solve
for p in "$SLA" "$DRV"; do
    [ -x "$p" ] || { echo "mem_solve.sh: $p not found (build first: cmake --build $BUILD)" >&2; exit 2; }
done
[ -x /usr/bin/time ] || { echo "mem_solve.sh: needs /usr/bin/time (Debian package time)" >&2; exit 2; }

DIR=$(mktemp -d "${TMPDIR:-/tmp}/sla_mem_solve.XXXXXX")
trap 'rm -rf "$DIR"' EXIT INT TERM
ROWS=$DIR/rows

# run LABEL N CMD...: one row (peak KiB and wall seconds from /usr/bin/time)
run() {
    label=$1 n=$2
    shift 2
    if ! /usr/bin/time -f '%M %e' -o "$DIR/time" "$@" >"$DIR/out" 2>"$DIR/err"; then
        echo "mem_solve.sh: failed: $*" >&2
        cat "$DIR/err" >&2
        return 0
    fi
    set -- $(cat "$DIR/time")
    echo "$label|$n|$2|$1" >>"$ROWS"
}

: >"$ROWS"
for N in $SIZES; do
    n=$((N * N))
    A=$DIR/poisson2d_$N.mtx
    "$SLA" gen poisson2d "$N" -o "$A" >/dev/null
    run "read: sla_mm_read (two-pass CSR)" $n "$DRV" read "$A"
    run "read: pipe (one-pass COO)" $n "$DRV" read-pipe "$A"
    run "sla solve ($METHOD+$PRECOND)" $n "$SLA" solve "$A" --method "$METHOD" --precond "$PRECOND"
    if [ -n "${SLA_OLD:-}" ]; then
        run "sla solve, $SLA_OLD" $n "$SLA_OLD" solve "$A" --method "$METHOD" --precond "$PRECOND"
    fi
    run "library: generate + solve" $n "$DRV" gen "$N" "$METHOD" "$PRECOND"
    rm -f "$A"
done

printf '%-44s %10s %9s %10s %8s\n' "what" "unknowns" "wall s" "peak MiB" "B/DOF"
awk -F'|' '{ printf "%-44s %10d %9.2f %10.1f %8.1f\n", $1, $2, $3, $4 / 1024, $4 * 1024 / $2 }' "$ROWS"
awk -F'|' '{ printf "{\"what\":\"%s\",\"unknowns\":%d,\"wall_s\":%.2f,\"peak_mib\":%.1f,\"bytes_per_unknown\":%.1f}\n", $1, $2, $3, $4 / 1024, $4 * 1024 / $2 }' "$ROWS"
