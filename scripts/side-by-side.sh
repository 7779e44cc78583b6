#!/usr/bin/env bash
# Two test sessions side by side on one machine, while an author's prove of the shipped suite
# runs beside them (Docker and local sandboxes, in the machine's own /tmp): both sessions must
# pass. A test that counts machine-wide state (another run's container, another process's
# endstate-* folder) fails here; tests/support/session.py is what keeps them apart.
#
# Usage: scripts/side-by-side.sh [pytest arguments]
# Without arguments, a representative subset that takes a few minutes: the Docker leak
# checks, the Ray cluster's killed node and Ctrl-C, the interrupt tests and the language
# server's cancelled proofs (the tests that failed when the machine was shared, issue 46).
# Prints each session's wall time; exits non-zero when either session fails.
set -u
cd "$(dirname "$0")/.."

if [ "$#" -gt 0 ]; then
  ARGS=("$@")
else
  ARGS=(
    tests/harness/test_sandbox_docker.py
    tests/executors/test_ray_cluster.py
    tests/reliability/test_interrupt.py
    tests/lsp/test_prove_incremental.py
    tests/test_shared_machine.py
    -k "left_behind or stray or removed_by_someone or killing or sigint or (interrupted_local and SIGINT) or interrupted_docker or hanging or incremental or cancelled or shared_machine"
  )
  # ten interruptions per case, not fifty: enough to open sandboxes under the signal, and
  # what is checked here is that two sessions keep apart, not the odds of a race
  export ENDSTATE_INTERRUPTS="${ENDSTATE_INTERRUPTS:-10}"
fi

logs=$(mktemp -d "${TMPDIR:-/tmp}/side-by-side-XXXXXX")
pids=()
author=""

cleanup() {
  # only what this script started: the author's loop (its own process group) and the sessions
  if [ -n "$author" ]; then kill -TERM -- "-$author" 2>/dev/null; wait "$author" 2>/dev/null; fi
  for pid in "${pids[@]}"; do kill -INT "$pid" 2>/dev/null; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null; done
  rm -rf "$logs"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# the author beside the tests: proves of the shipped suite, over and over, in /tmp
setsid bash -c '
  trap "kill -TERM 0" TERM
  while :; do
    env -u TMPDIR .venv/bin/python -m endstate_author prove tasks --sandbox docker \
      --only holdout --no-cache -q -o json >/dev/null 2>&1
    env -u TMPDIR .venv/bin/python -m endstate_author prove tasks --sandbox local \
      --only probes --no-cache -q -o json >/dev/null 2>&1
    sleep 1
  done' &
author=$!

declare -A started name code took
for which in A B; do
  started[$which]=$(date +%s)
  .venv/bin/python -m pytest -q -rs -p no:cacheprovider "${ARGS[@]}" >"$logs/$which.log" 2>&1 &
  pids+=($!)
  name[$!]=$which
  [ "$which" = A ] && sleep 2  # two runs' Ray clusters start a moment apart, as they would
done
while [ "${#pids[@]}" -gt 0 ]; do
  wait -n -p finished "${pids[@]}"
  rc=$?
  which=${name[$finished]}
  code[$which]=$rc
  took[$which]=$(( $(date +%s) - ${started[$which]} ))
  left=()
  for pid in "${pids[@]}"; do [ "$pid" != "$finished" ] && left+=("$pid"); done
  pids=("${left[@]+"${left[@]}"}")
done

status=0
for which in A B; do
  echo "session $which: exit ${code[$which]}, wall ${took[$which]}s"
  if [ "${code[$which]}" -ne 0 ]; then
    status=1
    tail -n 60 "$logs/$which.log"
  else
    tail -n 1 "$logs/$which.log"
  fi
done
exit "$status"
