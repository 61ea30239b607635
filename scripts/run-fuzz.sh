#!/usr/bin/env bash
# Run the libFuzzer harnesses for a bounded time each.
#   run-fuzz.sh --probe CC            exit 0 if CC can build a libFuzzer binary
#   run-fuzz.sh BUILD SECONDS T...    run BUILD/bin/fuzz_T for SECONDS each on
#                                     fuzz/corpus/T (seeds, read only) and
#                                     BUILD/corpus/T (what it finds); a crash
#                                     input lands in BUILD/crashes/T/ and fails
#                                     the run (copy it to
#                                     tests/data/fuzz-regressions/T/ once fixed)
set -euo pipefail
if [ "${1:-}" = --probe ]; then
  cc=${2:-clang-14}
  command -v "$cc" >/dev/null 2>&1 || exit 1
  d=$(mktemp -d)
  trap 'rm -rf "$d"' EXIT
  printf '#include <stdint.h>\n#include <stddef.h>\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }\n' > "$d/p.c"
  "$cc" -fsanitize=fuzzer,address "$d/p.c" -o "$d/p" >/dev/null 2>&1
  exit $?
fi
build=$1 secs=$2
shift 2
root=$(cd "$(dirname "$0")/.." && pwd)
status=0
summary=""
for t in "$@"; do
  mkdir -p "$build/corpus/$t" "$build/crashes/$t"
  log="$build/fuzz_$t.log"
  echo "sla: fuzzing $t for ${secs}s"
  # OMP: one thread (the harnesses use one; no idle OpenMP pool per run)
  if OMP_NUM_THREADS=1 ASAN_OPTIONS=detect_leaks=1 \
     "$build/bin/fuzz_$t" -max_total_time="$secs" -max_len=4096 -rss_limit_mb=2048 \
       -timeout=10 -print_final_stats=1 -artifact_prefix="$build/crashes/$t/" \
       "$build/corpus/$t" "$root/fuzz/corpus/$t" >"$log" 2>&1; then
    :
  else
    echo "sla: fuzz_$t FOUND A CRASH: see $log and $build/crashes/$t/" >&2
    tail -40 "$log" >&2
    status=1
  fi
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
  summary="$summary $t=$runs"
done
echo "sla: fuzz executions:$summary"
exit $status
