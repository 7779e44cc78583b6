"""tasks_for_files: which task folders a list of changed files belongs to (real files on disk)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from endstate_author.hooks import task_of, tasks_for_files
from tests.rules.conftest import TaskBuilder, good


@pytest.fixture
def suite(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    build = TaskBuilder(tmp_path / "tasks")
    build(good(id="alpha"), extra={"oracle.json": "[]\n", "NOTES.md": "notes\n"})
    build(good(id="beta"), extra={"defects/wrong/chunker/core.py": "x = 1\n"})
    # a task.json inside a fixture is data of the outer task, not a task of its own
    build(good(id="gamma"), extra={"fixture/inner/task.json": "{}\n"})
    monkeypatch.chdir(tmp_path)
    return Path("tasks")


def test_each_task_part_maps_to_its_task(suite: Path) -> None:
    for rel in (
        "task.json",
        "prompt.md",
        "oracle.json",
        "fixture/chunker/core.py",
        "solution/chunker/core.py",
        "holdout/tests/test_holdout_chunk.py",
    ):
        assert task_of(suite / "alpha" / rel) == suite / "alpha", rel
    assert task_of(suite / "beta" / "defects" / "wrong" / "chunker" / "core.py") == suite / "beta"


def test_files_outside_task_parts_map_to_nothing(suite: Path) -> None:
    assert task_of(suite / "alpha" / "NOTES.md") is None
    assert task_of(Path("README.md")) is None
    assert task_of(suite / "alpha" / "fixture") is None  # a folder without task.json
    assert task_of(suite / "alpha") == suite / "alpha"  # a task folder names itself
    assert tasks_for_files([suite / "alpha" / "NOTES.md", Path("setup.cfg")]) == []


def test_outermost_task_wins_for_nested_task_json(suite: Path) -> None:
    assert task_of(suite / "gamma" / "fixture" / "inner" / "task.json") == suite / "gamma"


def test_deduplicated_and_sorted(suite: Path) -> None:
    files = [
        suite / "beta" / "prompt.md",
        suite / "alpha" / "fixture" / "chunker" / "core.py",
        suite / "beta" / "task.json",
        (suite / "alpha" / "task.json").resolve(),  # the same task, spelt absolutely
    ]
    assert tasks_for_files(files) == [suite / "alpha", suite / "beta"]


def test_deleted_file_still_maps_to_its_task(suite: Path) -> None:
    gone = suite / "alpha" / "solution" / "removed.py"
    assert not gone.exists()
    assert tasks_for_files([gone]) == [suite / "alpha"]


def test_module_entry_lints_only_changed_tasks(suite: Path) -> None:
    """The hook's entry point, as pre-commit runs it: a broken task not named stays unread."""
    manifest = suite / "beta" / "task.json"
    manifest.write_text(manifest.read_text().replace('"max_steps"', '"max_step"'))
    hook = [sys.executable, "-m", "endstate_author.hooks", "lint"]
    clean = subprocess.run(
        [*hook, str(suite / "alpha" / "prompt.md")], capture_output=True, text=True, timeout=120
    )
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert "1 task(s): tasks/alpha" in clean.stderr
    broken = subprocess.run(
        [*hook, str(suite / "beta" / "fixture" / "chunker" / "core.py")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert broken.returncode == 1, broken.stdout + broken.stderr
    assert "max_step" in broken.stdout
    assert "Traceback" not in broken.stderr
    nothing = subprocess.run([*hook, "README.md"], capture_output=True, text=True, timeout=120)
    assert nothing.returncode == 0 and nothing.stdout == ""
