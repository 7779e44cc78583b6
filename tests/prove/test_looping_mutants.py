"""A task whose solution steps through dates one day at a time (``looping/count-business-days``):
the mutants that stop the step (``day += step`` removed, a step of ``timedelta()`` or of
``timedelta(days=0)``) never end. Each is cut at a bound taken from the solution's own run in
the same judge, reported "killed: timed out" (never a survivor, never left unrun), and the
whole mutant run stays within a small multiple of one bare run of the task's tests, where each
such mutant used to cost the 30 s call limit (61.8 s for this task's mutants)."""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import require_walls

# wall-clock bounds and a ratio to bare runs taken beside them: one at a time
# (scripts/run-tests.sh), never beside a second worker's load
pytestmark = pytest.mark.alone

TASK = Path(__file__).resolve().parent / "looping" / "count-business-days"
LOOPING = {
    "mfad27e3d": "`day += step` removed",
    "md6c25d1f": "`1` → `0`",
    "m52fb6c8a": "keyword argument `days=` removed",
}
"""The mutants that never end (ids follow the solution's text)."""
SLOW = {"me2aa41c9": "`+=` → `-=`"}
"""A mutant that ends, but only after some 740,000 steps back to the year 1 (``day -= step``),
with the OverflowError that fails its tests: it runs about as long as its bound, so it is cut
on one run and ends failing on another. Killed either way; never a survivor."""
BARE_RUNS = 100
"""The mutants' prove (a fresh process: its start, the sandbox, two batches, 27 mutants, each
looping one cut two or three times) must finish within this many bare runs of the task's
tests. Measured on 2 shared cores at loads of 5-11: 20-78 (against the fastest of three bare
runs); before the bound the looping mutants cost 30 s each, and the mutants' prove 61.8 s,
over 600 bare runs."""


def _bare_run(tmp: Path) -> float:
    """The median of five runs of the task's test command on its solved tree, as
    ``bench/bare.py`` runs it: the interpreter itself, no sandbox. The median, not the
    fastest: the prove beside it is one run through the machine's load, and on a shared
    machine the fastest of a few 0.1 s runs swung the ratio from 32 to 78 between two runs."""
    tree = tmp / "bare"
    for part in ("fixture", "solution", "holdout"):
        shutil.copytree(TASK / part, tree, dirs_exist_ok=True)
    command = [sys.executable, "-m", "unittest", "discover", "-s", "tests", "-t", "."]
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp), "PYTHONDONTWRITEBYTECODE": "1"}
    took = []
    for _ in range(5):
        started = time.perf_counter()
        proc = subprocess.run(command, cwd=tree, env=env, capture_output=True, timeout=60)
        took.append(time.perf_counter() - started)
        assert proc.returncode == 0, proc.stderr
    return statistics.median(took)


def _prove(cache: Path) -> tuple[dict[str, Any], float]:
    env = {**os.environ, "ENDSTATE_AUTHOR_CACHE": str(cache)}
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "endstate_author", "prove", "--sandbox", "local", "-o", "json",
         "--only", "mutants", "--no-cache", str(TASK)],
        capture_output=True, text=True, env=env, timeout=600,
    )
    took = time.perf_counter() - started
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return json.loads(proc.stdout), took


def test_mutants_that_loop_are_killed_by_their_time_bound(tmp_path: Path) -> None:
    require_walls()
    bare = _bare_run(tmp_path)
    report, took = _prove(tmp_path / "cache")
    (task,) = report["tasks"]
    checks = {c["check"]: c for c in task["checks"]}
    for mid, what in LOOPING.items():
        check = checks[f"mutant {mid} fails"]
        assert check["outcome"] == "pass", check
        assert what in check["detail"] and ": killed: timed out: " in check["detail"], check
    score = task["mutation_score"]
    assert score["complete"] and score["not_run"] == 0 and score["over_budget"] == 0, score
    assert score["survived"] == 0 and score["killed"] == score["run"], score
    cut = {c["check"].split()[1] for c in task["checks"] if ": killed: timed out: " in c["detail"]}
    assert set(LOOPING) <= cut <= set(LOOPING) | set(SLOW), cut
    assert score["timed_out"] == len(cut), score
    print(f"\nlooping mutants' prove: {took:.2f} s = {took / bare:.1f} bare runs of {bare:.3f} s",
          file=sys.stderr)
    assert took <= BARE_RUNS * bare, (
        f"the mutants' prove took {took:.2f} s = {took / bare:.0f} bare runs of {bare:.3f} s "
        f"(at most {BARE_RUNS})")
