#!/usr/bin/env bash
# `make run`: lint and prove the shipped suite, as a newcomer would first see it.
# Docker is used when `endstate-author sandbox status` says a Docker run can start (a daemon
# answers and the image prove would choose is there: make test builds the toolkit's own with
# `endstate-author sandbox build`); otherwise the local sandbox, which prove says plainly does
# not isolate. The image is chosen by prove itself, the same way as for any user.
set -u
cd "$(dirname "$0")/.."
bin=.venv/bin
sandbox=(--sandbox local)
if $bin/endstate-author sandbox status >/dev/null 2>&1; then
  sandbox=(--sandbox docker)
else
  echo "== no usable Docker sandbox (see: $bin/endstate-author sandbox status)"
fi
echo "== endstate-author lint tasks/ --strict"
$bin/endstate-author lint tasks/ --strict
lint_rc=$?
echo "== endstate-author prove tasks/ ${sandbox[*]}"
started=$(date +%s)
$bin/endstate-author prove tasks/ "${sandbox[@]}"
prove_rc=$?
echo "== prove took $(( $(date +%s) - started )) s (a second run is answered from the cache)"
if [ "$lint_rc" -ne 0 ] || [ "$prove_rc" -ne 0 ]; then exit 1; fi
