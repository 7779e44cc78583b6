#!/usr/bin/env bash
# Run the test suite; "no tests collected" (pytest exit 5) is a failure, never a pass.
#
# Without arguments (what `make test` and CI run), in two parts:
#   1. every test not marked `alone`, on $ENDSTATE_TEST_WORKERS pytest-xdist workers (default
#      2), a test module whole to one worker (tests/conftest.py's scheduler);
#   2. the tests marked `alone`, one at a time: each bounds a run by wall-clock time taken
#      beside another, and a second worker's load would make the bound measure the machine.
# With arguments, pytest runs them as given, in one process (a file, a -k expression...).
# The 30 slowest tests of each part are listed at its end: the suite must stay well under
# 20 minutes.
set -u
cd "$(dirname "$0")/.."
PYTEST=(.venv/bin/python -m pytest -q -rs -p no:cacheprovider --durations=30)

checked() {  # pytest's exit status, with "no tests collected" made a failure
  local rc=$1
  if [ "$rc" -eq 5 ]; then
    echo "run-tests: pytest collected no tests; that is a failure" >&2
    return 1
  fi
  return "$rc"
}

if [ "$#" -gt 0 ]; then
  "${PYTEST[@]}" "$@"
  checked $?
  exit $?
fi

workers="${ENDSTATE_TEST_WORKERS:-2}"
started=$(date +%s)
echo "run-tests: part 1 of 2: the tests not marked alone, on $workers workers"
"${PYTEST[@]}" -n "$workers" -m "not alone"
checked $?
first=$?
echo "run-tests: part 2 of 2: the tests marked alone, one at a time"
"${PYTEST[@]}" -m alone
checked $?
second=$?
echo "run-tests: both parts took $(( $(date +%s) - started )) s"
[ "$first" -eq 0 ] && [ "$second" -eq 0 ]
