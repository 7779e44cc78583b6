"""Which probe checks prove plans: the stubs variant only where it grades another end state.

The "(with stubs)" run of a probe lays the files solution/ adds over the fixture as empty files
before the probe. When solution/ adds no file, that run is the plain probe again (the same end
state, the same graders), so it is planned once; when it adds one, both runs are planned, and
the stubs run really does grade the stub.
"""

from __future__ import annotations

from pathlib import Path

from endstate_author.probes.catalogue import PROBES
from endstate_author.prove.checks import probes
from endstate_author.prove.model import Plan, ProveContext
from endstate_harness.graders import grader_search_paths
from endstate_harness.sandbox.choice import SandboxChoice
from endstate_harness.task import load_task
from tests.support.tasks import SOLUTION, TaskBuilder


def _names(task_root: Path) -> list[str]:
    return [name for _, name, _ in probes.jobs(load_task(task_root), Plan())]


def test_solution_that_adds_no_file_plans_each_probe_once(tmp_path: Path) -> None:
    root = TaskBuilder(tmp_path)()  # the solution edits chunker/core.py, which the fixture has
    names = _names(root)
    assert names == [f"probe {p.id}" for p in PROBES]
    assert not any("(with stubs)" in n for n in names)


def test_solution_that_adds_a_file_plans_the_stubs_variant_too(tmp_path: Path) -> None:
    added = {**SOLUTION, "chunker/extra.py": "LIMIT = 3\n"}
    root = TaskBuilder(tmp_path)(solution=added)
    names = _names(root)
    expected = [f"probe {p.id}{v}" for p in PROBES for v in ("", " (with stubs)")]
    assert names == expected
    # and it runs: the empty stub of chunker/extra.py beside the probe's edit is still rejected
    task = load_task(root)
    ctx = ProveContext(task, SandboxChoice("local", grading=True), grader_search_paths(root))
    stubbed = next(
        fn for _, name, fn in probes.jobs(task, Plan()) if name == "probe edit-tests (with stubs)"
    )
    assert stubbed(ctx).outcome == "pass"


class _Spy:
    """A probe that writes nothing and notes what the live tree held when it was applied."""

    id = "spy"

    def __init__(self) -> None:
        self.seen: list[str | None] = []

    def apply(self, live: Path, _targets: list[str], _test_dir: str) -> list[str]:
        stub = live / "chunker" / "extra.py"
        self.seen.append(stub.read_text() if stub.exists() else None)
        return []


def test_the_stubs_variant_lays_the_new_files_empty_before_the_probe(tmp_path: Path) -> None:
    root = TaskBuilder(tmp_path)(solution={**SOLUTION, "chunker/extra.py": "LIMIT = 3\n"})
    task = load_task(root)
    ctx = ProveContext(task, SandboxChoice("local", grading=True), grader_search_paths(root))
    spy = _Spy()
    for stubs in ([], ["chunker/extra.py"]):
        result = probes.probe_check(spy, [], "tests", stubs)(ctx)
        assert result.outcome == "pass"  # the untouched fixture (+ an empty stub) still fails
    assert spy.seen == [None, ""]
