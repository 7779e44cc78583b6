#!/usr/bin/env bash
# `make run`: lint and prove the shipped suite, as a newcomer would first see it.
set -u
cd "$(dirname "$0")/.."
bin=.venv/bin
echo "== endstate-author lint tasks/ --strict"
$bin/endstate-author lint tasks/ --strict
lint_rc=$?
prove_rc=0
if $bin/endstate-author prove --help >/dev/null 2>&1; then
  echo "== endstate-author prove tasks/"
  $bin/endstate-author prove tasks/
  prove_rc=$?
fi
if [ "$lint_rc" -ne 0 ] || [ "$prove_rc" -ne 0 ]; then exit 1; fi
