"""The judge and its child share one CPU while they talk (``launch.shared_cpu``): checked from
inside a real grading, in every sandbox the judge runs in, for one run and for a batch of
variants; and the choice itself (fewest holders first, released after, off on request)."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from endstate_harness.graders import judged_tests
from endstate_harness.graders.judge import launch
from endstate_harness.graders.judge.grader import judge_variants
from endstate_harness.graders.judge.main import run_on
from endstate_harness.sandbox.base import TreeSandbox
from tests.harness.test_judge import _box, backend, make_task  # noqa: F401

WHERE = (
    "import os\n\n"
    "def add(a, b):\n    return a + b\n\n"
    "def cpus():\n    return sorted(os.sched_getaffinity(0))\n"
)
SAME_CPU_TEST = """\
import os
import unittest

from pkg.calc import cpus


class SameCpu(unittest.TestCase):
    def test_the_child_runs_where_the_judge_runs(self):
        mine = sorted(os.sched_getaffinity(0))
        self.assertEqual(len(mine), 1)
        self.assertEqual(cpus(), mine)
"""


def _two_cpus() -> None:
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("this process may use one CPU only: there is no CPU to choose")


@contextmanager
def _graded_box(kind: str, tmp_path: Path) -> Iterator[TreeSandbox]:
    """A sandbox of ``kind`` holding the end state that answers where it runs, sealed, with
    the holdout test that asks whether its child runs on the judge's one CPU."""
    task = make_task(tmp_path / "task")
    (task / "holdout" / "tests" / "test_same_cpu.py").write_text(SAME_CPU_TEST)
    with _box(kind, task / "fixture") as box:
        box.write_text("pkg/calc.py", WHERE)
        box.seal()
        box.stage(task / "holdout")
        yield box


def test_a_judged_run_and_its_child_share_one_cpu(
    backend: str, tmp_path: Path  # noqa: F811
) -> None:
    _two_cpus()
    with _graded_box(backend, tmp_path) as box:
        verdict = judged_tests(box)
    assert verdict.passed, verdict.model_dump()


def test_every_variant_of_a_batch_shares_the_judges_cpu(
    backend: str, tmp_path: Path  # noqa: F811
) -> None:
    _two_cpus()
    with _graded_box(backend, tmp_path) as box:
        variants: list[dict[str, str | None]] = [
            {"pkg/calc.py": WHERE}, {"pkg/calc.py": WHERE + "\nX = 1\n"}, {"pkg/calc.py": WHERE}]
        verdicts = judge_variants(box, variants)
    assert [v.passed for v in verdicts] == [True, True, True]


def test_without_pairing_nothing_is_pinned(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``ENDSTATE_PAIR_CPU=0``: the scheduler places both (the test that asks for one CPU
    fails), which is also what shows the test above can fail."""
    _two_cpus()
    monkeypatch.setenv(launch.PAIR_CPU_ENV, "0")
    with _graded_box("local-no-walls", tmp_path) as box:
        verdict = judged_tests(box)
    assert not verdict.passed
    assert "test_the_child_runs_where_the_judge_runs" in str(verdict.model_dump())


def test_the_fewest_held_cpu_is_chosen_and_released(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2})
    monkeypatch.delenv(launch.PAIR_CPU_ENV, raising=False)
    with launch.shared_cpu() as a, launch.shared_cpu() as b, launch.shared_cpu() as c:
        assert sorted([a, b, c]) == [0, 1, 2]  # type: ignore[type-var]
        with launch.shared_cpu() as d:
            assert d in (0, 1, 2)
            with launch.shared_cpu() as e:
                assert e in (0, 1, 2) and e != d
    assert launch._CPU_USE == {}


def test_concurrent_pairs_spread_over_the_cpus(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {3, 5})
    held: list[int | None] = []
    inside = threading.Barrier(2)

    def pair() -> None:
        with launch.shared_cpu() as cpu:
            held.append(cpu)
            inside.wait(timeout=10)

    threads = [threading.Thread(target=pair) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(held) == [3, 5]  # type: ignore[type-var]


@pytest.mark.parametrize("allowed, env", [({4}, None), ({0, 1}, "0")])
def test_no_cpu_when_there_is_nothing_to_choose_or_it_is_off(
    monkeypatch: pytest.MonkeyPatch, allowed: set[int], env: str | None
) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: allowed)
    if env is None:
        monkeypatch.delenv(launch.PAIR_CPU_ENV, raising=False)
    else:
        monkeypatch.setenv(launch.PAIR_CPU_ENV, env)
    with launch.shared_cpu() as cpu:
        assert cpu is None


def test_run_on_a_cpu_it_may_not_use_changes_nothing() -> None:
    before = os.sched_getaffinity(0)
    run_on(10_000)  # no such CPU: refused by the kernel, ignored
    run_on("1")  # not a CPU number
    assert os.sched_getaffinity(0) == before
