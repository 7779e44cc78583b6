#!/usr/bin/env bash
# `make run`: lint and prove the shipped suite, as a newcomer would first see it.
# Docker is used when a daemon answers and the local sandbox image exists (make test builds
# it); otherwise the local sandbox, which prove says plainly does not isolate.
set -u
cd "$(dirname "$0")/.."
bin=.venv/bin
sandbox=(--sandbox local)
if docker info >/dev/null 2>&1 && docker image inspect endstate-sandbox:local >/dev/null 2>&1; then
  sandbox=(--sandbox docker --image "${ENDSTATE_SANDBOX_IMAGE:-endstate-sandbox:local}")
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
