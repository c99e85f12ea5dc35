#!/usr/bin/env bash
# The test suite three runs in a row while a CPU hog (a busy loop on every core but one) runs
# beside it: the check that no test depends on the machine being idle.
#
#   scripts/stress_ci.sh                      # the whole suite, 3 runs
#   RUNS=1 scripts/stress_ci.sh tests/reliability/test_cluster_sentinel.py
#   HOGS=1 scripts/stress_ci.sh tests/e2e      # one hog whatever the core count
#
# Arguments are passed to pytest (default: the whole suite, -q). PYTHON picks the interpreter
# (default python3). The hogs are this script's children, stopped by pid on exit, whatever
# the outcome. Exit status: the first failing run's, else 0.
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS="${RUNS:-3}"
PYTHON="${PYTHON:-python3}"
cores="$(nproc 2>/dev/null || echo 2)"
HOGS="${HOGS:-$(( cores > 1 ? cores - 1 : 1 ))}"

hogs=()
stop_hogs() {
  for pid in "${hogs[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${hogs[@]}"; do wait "$pid" 2>/dev/null || true; done
}
trap stop_hogs EXIT INT TERM

for _ in $(seq 1 "$HOGS"); do
  "$PYTHON" -c 'while True: pass' &
  hogs+=("$!")
done
echo "stress: ${#hogs[@]} CPU hog(s) on ${cores} core(s): pids ${hogs[*]}"

args=("$@")
if [ "${#args[@]}" -eq 0 ]; then args=(-q); fi
status=0
for run in $(seq 1 "$RUNS"); do
  echo "stress: run ${run}/${RUNS}: pytest ${args[*]}"
  start=$(date +%s)
  if "$PYTHON" -m pytest "${args[@]}" -p no:cacheprovider; then
    echo "stress: run ${run} passed in $(( $(date +%s) - start )) s"
  else
    status=$?
    echo "stress: run ${run} FAILED (exit ${status}) after $(( $(date +%s) - start )) s"
    break
  fi
done
exit "$status"
