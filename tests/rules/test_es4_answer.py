"""ES415 — the fixture already holds the answer. Patches are made by the real `diff -u` and
`git diff` from the task's own fixture and solution, as an author leaves them behind."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.rules.conftest import TaskBuilder
from tests.rules.helpers_es345 import absent, found
from tests.support.tasks import FIXTURE, SOLUTION

CORE = "chunker/core.py"
LONGER = {  # a solution that changes more than one line, so a patch has context and hunks
    CORE: SOLUTION[CORE] + "\n\ndef pairs(items):\n    return chunk(items, 2)\n",
}


def _diff(tmp_path: Path, tool: str) -> str:
    """A unified diff of the fixture's core.py into the solution's, made by ``tool``."""
    work = tmp_path / f"diff-{tool}"
    (work / "a" / "chunker").mkdir(parents=True)
    (work / "b" / "chunker").mkdir(parents=True)
    (work / "a" / CORE).write_text(FIXTURE[CORE])
    (work / "b" / CORE).write_text(LONGER[CORE])
    if tool == "git":
        if shutil.which("git") is None:
            pytest.skip("git is not installed")
        proc = subprocess.run(["git", "diff", "--no-index", "a", "b"], cwd=work,
                              capture_output=True, text=True)
    else:
        proc = subprocess.run(["diff", "-u", f"a/{CORE}", f"b/{CORE}"], cwd=work,
                              capture_output=True, text=True)
    assert proc.returncode == 1 and "@@" in proc.stdout, proc.stderr
    return proc.stdout.replace("a/a/", "a/").replace("b/b/", "b/")


@pytest.mark.parametrize("name", ["chunker/core.py.orig", "chunker/core.py.bak",
                                  "chunker/core.py~", "notes/answer.py"])
def test_es415_a_copy_of_the_solution_under_another_name(make_task: TaskBuilder,
                                                          name: str) -> None:
    task = make_task(fixture={**FIXTURE, name: LONGER[CORE]}, solution=LONGER)
    [d] = found(task, "ES415")
    assert d.severity == "error" and CORE in d.message and d.file == task / "fixture" / name


@pytest.mark.parametrize("tool,name", [("diff", "fix.patch"), ("git", "changes.diff"),
                                       ("git", "NOTES.txt"), ("diff", "chunker/core.py.rej")])
def test_es415_a_patch_that_yields_the_solution(make_task: TaskBuilder, tmp_path: Path,
                                                tool: str, name: str) -> None:
    patch = _diff(tmp_path, tool)
    task = make_task(fixture={**FIXTURE, name: patch}, solution=LONGER)
    [d] = found(task, "ES415")
    assert "patch" in d.message and CORE in d.message and d.file == task / "fixture" / name


def test_es415_a_patch_made_above_the_fixture_folder(make_task: TaskBuilder,
                                                     tmp_path: Path) -> None:
    patch = _diff(tmp_path, "git").replace("a/chunker/", "a/fixture/chunker/").replace(
        "b/chunker/", "b/fixture/chunker/")
    task = make_task(fixture={**FIXTURE, "fix.patch": patch}, solution=LONGER)
    assert len(found(task, "ES415")) == 1


def test_es415_a_new_file_equal_to_a_fixture_module_is_a_move(make_task: TaskBuilder) -> None:
    """A rename task: the solution adds chunker/split.py with what chunker/core.py holds."""
    core = FIXTURE[CORE] + "\n\ndef pairs(items):\n    return chunk(items, 2)\n"
    task = make_task(fixture={**FIXTURE, CORE: core}, solution={"chunker/split.py": core})
    absent(task, "ES415")
    task = make_task(fixture={**FIXTURE, CORE: core, "chunker/split.py.bak": core},
                     solution={"chunker/split.py": core})
    assert len(found(task, "ES415")) == 1


def test_es415_near_misses(make_task: TaskBuilder, tmp_path: Path) -> None:
    """A backup of the fixture's own (broken) code, a patch that does something else, a patch
    that no longer applies, small files alike by nature: none gives the answer away."""
    patch = _diff(tmp_path, "diff")
    other = patch.replace("return chunk(items, 2)", "return chunk(items, 3)")
    stale = patch.replace("range(0, len(items) - size + 1, size)", "range(0, 99, size)")
    fixture = {
        **FIXTURE,
        "chunker/core.py.orig": FIXTURE[CORE],
        "other.patch": other,
        "stale.diff": stale,
        "chunker/empty.py": "",
    }
    task = make_task(fixture=fixture, solution={**LONGER, "chunker/__init__.py":
                                                 FIXTURE["chunker/__init__.py"] + "\n"})
    absent(task, "ES415")
