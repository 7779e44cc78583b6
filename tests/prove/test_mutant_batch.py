"""Mutants graded in batches (one judge, one child, a process forked per mutant) give every
mutant the outcome it gets graded alone: the batch only kills, survivors are graded alone."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from endstate_author.prove.checks import mutants as mutant_checks
from endstate_author.prove.model import ProveContext
from endstate_author.prove.mutant_batch import (
    BATCH_SIZE,
    OFF_ENV,
    MutantBatch,
    batch_count,
    batch_grader,
    batches,
)
from endstate_author.prove.run import grader_search_paths, load_for_prove
from endstate_harness.sandbox.choice import SandboxChoice
from tests.conftest import require_walls
from tests.prove.test_mutants import GUARDED
from tests.prove.test_prove import STRICT_HOLDOUT, manifest
from tests.rules.conftest import TaskBuilder, good

ROOT = Path(__file__).resolve().parents[2]
JUDGED = {"name": "endstate_harness.graders:judged_tests", "args": {"start_dir": "tests"}}


def _judged_task(root: Path, graders: list[dict[str, Any]] | None = None) -> Path:
    chosen = graders or [JUDGED, *manifest()["graders"][1:]]
    return TaskBuilder(root)(good(graders=chosen), holdout=STRICT_HOLDOUT,
                             solution={"chunker/core.py": GUARDED})


def _prove(task: Path, cache: Path, batched: bool) -> dict[str, Any]:
    env = {**os.environ, "ENDSTATE_AUTHOR_CACHE": str(cache), OFF_ENV: "1" if batched else "0"}
    proc = subprocess.run(
        [sys.executable, "-m", "endstate_author", "prove", "--sandbox", "local", "-o", "json",
         "--only", "mutants", "--no-cache", str(task)],
        capture_output=True, text=True, env=env, timeout=600,
    )
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(proc.stdout)  # type: ignore[no-any-return]


def _outcomes(data: dict[str, Any]) -> dict[str, tuple[str, str | None]]:
    return {c["check"]: (c["outcome"], c.get("code")) for t in data["tasks"]
            for c in t["checks"]}


CONTAINS_GUARD = {"name": "endstate.evals.graders:file_contains",
                  "args": {"path": "chunker/core.py", "text": "size <= 0"}}
"""A grader of the sealed state that reads the mutated file: it kills the guard's mutants
before the judge runs (on the batch sandbox's snapshot with the mutant's file in it)."""


SURVIVORS = ("ES911", "ES916")
"""A surviving mutant's codes: with a counterexample, and without one."""


# a mutant near its time bound is cut in one run and ends failing in the other when a second
# worker's load falls on one of them: both runs one at a time (scripts/run-tests.sh)
@pytest.mark.alone
@pytest.mark.parametrize("task", ["suite", "suite-sealed", "fix-help-text-wrap",
                                  "refactor-money-formatting"])
def test_batched_and_alone_agree(task: str, tmp_path: Path) -> None:
    require_walls()
    if task == "suite-sealed":
        root = _judged_task(tmp_path / "suite", [JUDGED, *manifest()["graders"][1:],
                                                 CONTAINS_GUARD])
    elif task == "suite":
        root = _judged_task(tmp_path / "suite")
    else:
        root = ROOT / "tasks" / task
    alone = _prove(root, tmp_path / "c1", batched=False)
    batched = _prove(root, tmp_path / "c2", batched=True)
    assert _outcomes(batched) == _outcomes(alone)
    def score(report: dict[str, Any]) -> dict[str, Any]:
        found = dict(report["tasks"][0]["mutation_score"])
        search = dict(found.pop("counterexample_search", None) or {})
        search.pop("seconds", None)  # the search's own time is the one thing that may differ
        return {**found, "counterexample_search": search}

    assert score(batched) == score(alone)
    found = sorted(d["message"] for d in batched["diagnostics"] if d["code"] in SURVIVORS)
    assert found == sorted(d["message"] for d in alone["diagnostics"] if d["code"] in SURVIVORS)
    if task == "suite":  # the guard no holdout test exercises: survivors, found either way
        assert found


def _context(root: Path) -> ProveContext:
    task, error = load_for_prove(root)
    assert task is not None, error
    return ProveContext(task, SandboxChoice(grading=True),
                        grader_search_paths(root, suite_root=root.parent), root.parent)


def test_the_batch_decides_kills_and_survivors_as_grading_alone_does(tmp_path: Path) -> None:
    require_walls()
    ctx = _context(_judged_task(tmp_path / "suite"))
    found = mutant_checks.mutant_set(ctx.task)
    assert found is not None and len(found.mutants) > 4
    grader = batch_grader(ctx.task)
    assert grader is not None
    batch = MutantBatch(found.mutants, grader, mutant_checks._applier)
    outcome = {m.id: batch.outcome(ctx, m) for m in found.mutants}
    assert all(o is not None for o in outcome.values())  # it judged every one
    survivors = {mid for mid, o in outcome.items() if o is not None and o[0] == "fail"}
    assert survivors and survivors != set(outcome)  # the guard's mutants, and the rest killed
    for mutant in found.mutants:  # each as graded alone
        alone = mutant_checks.mutant_check(mutant, "k", use_cache=False)(ctx)
        assert (alone.outcome, alone.detail) == outcome[mutant.id] if mutant.id in survivors \
            else alone.outcome == "pass", mutant.description


def test_only_tasks_whose_one_test_grader_is_the_judge_batch(tmp_path: Path) -> None:
    judged = _context(_judged_task(tmp_path / "a")).task
    assert batch_grader(judged) is not None
    found = mutant_checks.mutant_set(judged)
    assert found is not None
    grouped = batches(judged, found.mutants, mutant_checks._applier)
    assert set(grouped) == {m.id for m in found.mutants}
    assert len({id(b) for b in grouped.values()}) >= 2  # spread over the workers
    in_process = _context(_judged_task(tmp_path / "b", manifest()["graders"])).task
    assert batch_grader(in_process) is None  # tests_pass: each mutant alone
    command = {"name": "endstate.evals.graders:command_succeeds",
               "args": {"command": "python3 -c pass"}}
    two = _context(_judged_task(tmp_path / "c", [JUDGED, command])).task
    assert batch_grader(two) is None  # a second grader that runs something: alone


@pytest.mark.parametrize(("mutants", "workers", "count"), [
    (93, 2, 2),  # add-markdown-table-alignment: one batch per worker
    (110, 2, 4),  # three would leave one worker idle through the last
    (21, 2, 2),
    (3, 2, 1),  # at most one batch per two mutants
    (4, 2, 2),
    (93, 1, 2),  # checks one at a time: as few batches as the size allows
    (93, 8, 8),  # every worker gets one
    (2 * 8 * BATCH_SIZE + 1, 8, 24),
])
def test_batches_fill_the_workers_evenly(mutants: int, workers: int, count: int) -> None:
    got = batch_count(mutants, workers)
    assert got == count
    assert -(-mutants // got) <= BATCH_SIZE or got == mutants // 2
    if got >= workers:
        assert got % workers == 0 or got == mutants // 2

