"""The warm judge (``endstate_harness.process.zygote``): the same verdicts as a fresh judge
process, a
zygote nothing can poison, and a fresh process whenever the warm one is off or gone.

The differential over every shipped task's every check is ``bench/warm.py`` (minutes); here
the judge's own task and one shipped task's grading checks are run both ways.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from endstate_author.probes.catalogue import PROBES, injection_targets
from endstate_harness.graders import judged_tests
from endstate_harness.process import zygote as warm
from endstate_harness.sandbox.local import LocalSandbox
from tests.harness.grader_fixture import make_task as make_grader_task
from tests.harness.test_judge import make_task

ROOT = Path(__file__).resolve().parents[2]
JUDGE = "endstate_harness.graders.judge.main"


def _checks(task: Path, calc: str | None = None, holdout: Path | None = None) -> list[tuple]:
    with LocalSandbox(task / "fixture") as box:
        if calc is not None:
            box.write_text("pkg/calc.py", calc)
        box.seal()
        box.stage(holdout or task / "holdout")
        verdict = judged_tests(box)
    # the judge's trusted folder is a new temporary folder each run
    return [(c.name, c.passed, re.sub(r"endstate-judge-\w+", "J", c.detail or ""))
            for c in verdict.checks]


@pytest.fixture
def cold(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(warm.WARM_ENV, "0")


def _zygote_pid() -> int | None:
    zygotes = [z for (module, _), z in warm._zygotes.items() if module == JUDGE and z.alive()]
    return zygotes[0].proc.pid if zygotes else None


def test_warm_and_fresh_judges_give_the_same_checks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    task = make_task(tmp_path / "task")
    solution = (task / "solution" / "pkg" / "calc.py").read_text()
    warm_runs = [_checks(task), _checks(task, solution)]
    assert _zygote_pid() is not None, "the warm judge was not used"
    monkeypatch.setenv(warm.WARM_ENV, "0")
    assert [_checks(task), _checks(task, solution)] == warm_runs
    fixture, solved = ([passed for _, passed, _ in run] for run in warm_runs)
    assert not all(fixture) and all(solved)


def test_what_one_run_does_to_its_process_never_reaches_the_next(tmp_path: Path) -> None:
    """The trusted tests of one run patch unittest, json and builtins in their process; the
    next run, forked from the same zygote, fails as it should."""
    task = make_task(tmp_path / "task")
    poison = tmp_path / "poison" / "tests"
    poison.mkdir(parents=True)
    (poison / "test_poison.py").write_text(textwrap.dedent("""\
        import builtins, json, unittest

        unittest.TestCase.assertEqual = lambda self, *a, **k: None
        unittest.TestCase.run = lambda self, result=None: None
        json.loads = lambda *a, **k: []
        builtins.len = lambda x: 0


        class Poison(unittest.TestCase):
            def test_nothing(self):
                pass
        """))
    _checks(task, holdout=poison.parent)
    first = _zygote_pid()
    assert first is not None
    after = _checks(task)
    assert _zygote_pid() == first, "the same zygote served both runs"
    assert after and not all(passed for _, passed, _ in after), after


def test_every_probe_is_still_rejected_by_the_warm_judge(tmp_path: Path) -> None:
    root = make_grader_task(tmp_path / "t")
    for probe in PROBES:
        with LocalSandbox(root / "fixture") as box:
            assert probe.apply(box.live, injection_targets(root / "fixture"), "tests")
            box.seal()
            box.stage(root / "holdout")
            assert not judged_tests(box).passed, probe.id
    assert _zygote_pid() is not None


def test_a_dead_zygote_is_replaced_and_off_means_fresh(tmp_path: Path, cold: None) -> None:
    task = make_task(tmp_path / "task")
    before = dict(warm._zygotes)
    _checks(task)
    assert warm._zygotes == before  # ENDSTATE_WARM=0: no zygote started
    os.environ.pop(warm.WARM_ENV)
    try:
        _checks(task)
        pid = _zygote_pid()
        assert pid is not None
        os.kill(pid, 9)
        warm._zygotes[next(k for k in warm._zygotes if k[0] == JUDGE)].proc.wait()
        assert not all(passed for _, passed, _ in _checks(task))
        assert _zygote_pid() not in (None, pid)
    finally:
        os.environ[warm.WARM_ENV] = "0"


def test_the_zygote_ends_with_the_process_that_started_it(tmp_path: Path) -> None:
    task = make_task(tmp_path / "task")
    script = textwrap.dedent(f"""\
        import sys
        from pathlib import Path
        sys.path.insert(0, {str(ROOT)!r})
        from tests.harness.test_warm import _checks, _zygote_pid
        _checks(Path({str(task)!r}))
        print(_zygote_pid())
        """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    pid = int(proc.stdout.strip())
    deadline = time.monotonic() + 10
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not Path(f"/proc/{pid}").exists(), "the zygote outlived its harness"
