# Shell helpers shared by the benchmark drivers (bench/run_all.sh,
# bench/anchors/run_anchors.sh); sourced, not run.

# Busy share of the machine (percent of all CPUs) over one second, from
# /proc/stat: user, nice, system, irq, softirq, steal count as busy; idle
# and iowait do not.
busy_pct() {
  local a b
  read -ra a < /proc/stat; sleep 1; read -ra b < /proc/stat
  local busy=0 total=0 i d
  for i in 1 2 3 4 5 6 7 8; do
    d=$(( b[i] - a[i] )); total=$(( total + d ))
    [ "$i" != 4 ] && [ "$i" != 5 ] && busy=$(( busy + d ))
  done
  echo $(( total > 0 ? 100 * busy / total : 0 ))
}
