"""Both libraries grade the same end states: same pass/fail, same check names.

endstate 0.3.0 (a dev dependency, from PyPI) and this project's graders are called on the
*same* sandbox object: the reference graders only call sandbox methods, so ours serves both.
Every built-in grader runs with several argument sets on every tree.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from endstate_harness import graders as ours
from endstate_harness.sandbox.local import LocalSandbox
from endstate_harness.task import GraderSpec
from tests.harness.grader_fixture import UNITTEST_COMMAND, make_task

reference = pytest.importorskip("endstate.evals.graders", reason="endstate==0.3.0 not installed")


def _edit_test(live: Path, task: Path) -> None:
    path = live / "tests" / "test_mod.py"
    path.write_text(path.read_text().replace("clamp(15, 0, 10), 10", "clamp(15, 0, 10), 9"))


def _delete(live: Path, task: Path) -> None:
    (live / "tests" / "test_mod.py").unlink()
    (live / "docs" / "notes.md").unlink()


def _skip(live: Path, task: Path) -> None:
    path = live / "tests" / "test_mod.py"
    text = path.read_text().replace(
        "    def test_clamp_high", "    @unittest.skipIf(True, 'later')\n    def test_clamp_high"
    )
    path.write_text(text + "\n\n@pytest.mark.xfail\ndef test_x():\n    pytest.skip('no')\n")


def _out_of_scope(live: Path, task: Path) -> None:
    shutil.copytree(task / "solution", live, dirs_exist_ok=True)
    (live / "README.md").write_text("# rewritten\n")
    (live / "docs" / "deep").mkdir()
    (live / "docs" / "deep" / "new.md").write_text("x")
    (live / "setup.cfg").write_text("[x]\n")


def _duplicated(live: Path, task: Path) -> None:
    shutil.copytree(task / "solution", live, dirs_exist_ok=True)
    path = live / "pkg" / "mod.py"
    path.write_text(
        path.read_text() + "\n\ndef clamp2(x, lo, hi):\n    return max(lo, min(x, hi))\n"
    )


def _solution(live: Path, task: Path) -> None:
    shutil.copytree(task / "solution", live, dirs_exist_ok=True)


def _pristine(live: Path, task: Path) -> None:
    return None


TREES: dict[str, Callable[[Path, Path], None]] = {
    "pristine": _pristine,
    "solution": _solution,
    "test-edited": _edit_test,
    "file-deleted": _delete,
    "skip-added": _skip,
    "out-of-scope": _out_of_scope,
    "duplicated-code": _duplicated,
}

CASES: list[tuple[str, dict[str, object]]] = [
    ("command_succeeds", {"command": UNITTEST_COMMAND}),
    ("command_succeeds", {"command": "test -f docs/notes.md", "name": "notes kept"}),
    ("command_succeeds", {"command": "exit 2", "expect_exit_code": 2}),
    ("command_succeeds", {"command": "sleep 3", "timeout_s": 0.3}),
    ("files_unchanged", {"paths": ["tests/test_mod.py"]}),
    ("files_unchanged", {"paths": ["tests/test_mod.py", "README.md", "absent.txt"], "name": "p"}),
    ("paths_exist", {"paths": ["pkg/mod.py", "tests/test_mod.py", "docs/notes.md"]}),
    ("paths_exist", {"paths": ["setup.cfg"]}),
    ("paths_absent", {"paths": ["setup.cfg", "docs/deep"]}),
    ("paths_absent", {"paths": ["docs/notes.md"]}),
    ("file_matches", {"path": "pkg/mod.py", "pattern": r"min\(x, hi\)\)$"}),
    ("file_matches", {"path": "pkg/mod.py", "pattern": "hi - 1", "should_match": False}),
    ("file_matches", {"path": "README.md", "pattern": "^# demo", "name": "title kept"}),
    ("file_contains", {"path": "README.md", "text": "with a bug"}),
    ("file_contains", {"path": "pkg/mod.py", "text": "hi - 1", "should_contain": False}),
    ("pattern_count", {"pattern": r"^def clamp", "maximum": 1}),
    ("pattern_count", {"pattern": r"max\(lo, min\(x, hi\)\)", "minimum": 1, "maximum": 1}),
    ("pattern_count", {"pattern": "clamp", "paths": ["pkg/mod.py", "nope.py"], "minimum": 2}),
    ("pattern_count", {"pattern": r"\w+", "glob": "*.md", "minimum": 3, "name": "words"}),
    ("pattern_count", {"pattern": "x"}),
    ("no_new_skips", {}),
    ("no_new_skips", {"glob": "tests/*", "name": "no skips"}),
    ("tree_unchanged", {}),
    ("tree_unchanged", {"name": "untouched"}),
    ("changed_paths_within", {"allowed": ["pkg/*"]}),
    ("changed_paths_within", {"allowed": ["pkg/*", "*.md"], "name": "scope"}),
    ("changed_paths_within", {"allowed": []}),
]


def test_every_builtin_reference_grader_is_covered() -> None:
    assert {name for name, _ in CASES} == set(ours.REFERENCE_GRADERS)


@pytest.mark.parametrize("tree", sorted(TREES))
def test_same_verdicts_as_endstate(tmp_path: Path, tree: str) -> None:
    task = make_task(tmp_path / "task")
    with LocalSandbox(task / "fixture") as box:
        TREES[tree](box.live, task)
        box.seal()
        box.stage(task / "holdout")
        differences = []
        outcomes = []
        for name, args in CASES:
            spec = GraderSpec(name=f"endstate.evals.graders:{name}", args=args)
            mine = ours.resolve(spec)(box)
            theirs = getattr(reference, name)(box, **args)
            outcomes.append(mine.passed)
            got = (mine.passed, [(c.name, c.passed) for c in mine.checks])
            want = (theirs.passed, [(c.name, c.passed) for c in theirs.checks])
            if got != want:
                differences.append((name, args, got, want))
        assert not differences, differences
        # the trees are not all alike: each grader sees some pass and some fail overall
        assert any(outcomes) and not all(outcomes)
