#!/usr/bin/env bash
# Runs test_collective_mpi under mpiexec: every collective on 2 and 4 ranks
# (oversubscribed: this may be a 2-core machine), then a job whose rank 1
# exits before a collective, then one whose rank 1 never joins (the
# watchdog's timeout). The last two must end, nonzero, within a bound.
# With a third argument, also the tensor-parallel MLP demo on 2 and 4 ranks
# (it compares itself with the block in one process).
# Usage: mpi_run.sh MPIEXEC TEST_BINARY [TP_MLP_BINARY]
set -uo pipefail
mpiexec=$1
bin=$2
tp=${3:-}
# Root may run jobs here (containers, CI); ranks share the cores.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_rmaps_base_oversubscribe=1
# Under ASan, no leak check: Open MPI leaves allocations at exit that
# cannot be told from opreg's (its libraries keep no frame pointers, so the
# stacks end in "unknown module"). opreg's group code is leak-checked by
# test_collective_groups, on a recording engine.
if [ -n "${ASAN_OPTIONS:-}" ]; then export ASAN_OPTIONS="$ASAN_OPTIONS:detect_leaks=0"; fi
run() { timeout "$1" "$mpiexec" --bind-to none "${@:2}"; }
status=0
fail() { echo "FAIL: $*"; status=1; }

for n in 2 4; do
  echo "== $n ranks: every collective"
  start=$(date +%s)
  run 600 -n "$n" "$bin" all || fail "$n ranks"
  echo "   $(( $(date +%s) - start )) s"
done

echo "== 2 ranks, rank 1 exits before a collective"
start=$(date +%s)
out=$(run 120 -n 2 "$bin" rank-exits 2>&1)
rc=$?
echo "$out" | tail -5
[ "$rc" -ne 0 ] || fail "the job ended with 0"
[ "$rc" -ne 124 ] || fail "the job hung (killed after 120 s)"
grep -q "waiting in all_reduce_" <<<"$out" || fail "rank 0 never reached the collective"
echo "   ended with $rc after $(( $(date +%s) - start )) s"

echo "== 2 ranks, rank 1 never joins: the 1 s timeout ends the job"
start=$(date +%s)
out=$(run 120 -n 2 "$bin" timeout 2>&1)
rc=$?
echo "$out" | tail -5
[ "$rc" -ne 0 ] || fail "the job ended with 0"
[ "$rc" -ne 124 ] || fail "the job hung (killed after 120 s)"
grep -q "dist::all_reduce_ on process group 'world' (mpi, rank 0 of 2) has not finished after 1000 ms" <<<"$out" ||
  fail "no timeout message"
elapsed=$(( $(date +%s) - start ))
[ "$elapsed" -lt 30 ] || fail "the timeout took $elapsed s"
echo "   ended with $rc after $elapsed s"
if [ -n "$tp" ]; then
  for n in 2 4; do
    echo "== the tensor-parallel MLP demo on $n ranks"
    run 120 -n "$n" "$tp" || fail "tp_mlp on $n ranks"
  done
fi
exit $status
