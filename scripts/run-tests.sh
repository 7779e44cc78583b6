#!/usr/bin/env bash
# Run the test suite; "no tests collected" (pytest exit 5) is a failure, never a pass.
# The 30 slowest tests are listed at the end: the suite must stay well under 20 minutes.
set -u
cd "$(dirname "$0")/.."
.venv/bin/python -m pytest -q -rs -p no:cacheprovider --durations=30 "$@"
rc=$?
if [ "$rc" -eq 5 ]; then
  echo "run-tests: pytest collected no tests; that is a failure" >&2
  exit 1
fi
exit "$rc"
