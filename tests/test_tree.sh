#!/bin/bash
# The tree's rules (issue 20): every C file in src/ and tools/ has a header
# comment saying its concept and at most 900 lines, the README's Layout
# section is the one scripts/layout.py generates from the tree, and
# libsla.so exports no internal (sla__) symbol.
#   test_tree.sh SOURCE_DIR LIBSLA_SO
set -u
src=$1 lib=$2
fail=0
/usr/bin/python3 "$src/scripts/layout.py" --check || fail=1
internal=$(nm -D --defined-only "$lib" | awk '$3 ~ /^sla__/ {print $3}')
if [ -n "$internal" ]; then
  echo "test_tree: libsla.so exports internal symbols:" $internal
  fail=1
fi
public=$(nm -D --defined-only "$lib" | awk '$2 == "T" && $3 ~ /^sla_/' | wc -l)
if [ "$public" -lt 100 ]; then
  echo "test_tree: libsla.so exports only $public sla_ functions (SLA_API missing?)"
  fail=1
fi
echo "test_tree: $public public functions exported, none internal"
exit $fail
