"""From the files a commit changes to the tasks they belong to (the git hooks' mapping)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from endstate_harness.layout import (
    DEFECTS_DIR,
    FIXTURE_DIR,
    HOLDOUT_DIR,
    ORACLE_FILE,
    PROMPT_FILE,
    SOLUTION_DIR,
    TASK_FILE,
)

TASK_FILES = frozenset({TASK_FILE, PROMPT_FILE, ORACLE_FILE})
"""Files directly in a task folder that are part of the task."""

TASK_DIRS = frozenset({FIXTURE_DIR, HOLDOUT_DIR, SOLUTION_DIR, DEFECTS_DIR})
"""Folders of a task whose every file is part of the task."""


def task_of(file: Path) -> Path | None:
    """The task folder ``file`` is part of, or None when it belongs to no task.

    A file belongs to a folder holding task.json when its path below that folder is one of
    the task's own files (task.json, prompt.md, oracle.json) or lies under fixture/,
    holdout/, solution/ or defects/. When several folders qualify, the outermost wins: a
    task.json inside another task's fixture/ is that task's data (discovery never descends
    into fixture/ either), not a task of its own. Other files beside task.json (notes, a
    README) are not read by any run, so changing them re-checks nothing.
    """
    if file.is_dir():
        return file if (file / TASK_FILE).is_file() else None
    parts = file.parts
    found: Path | None = None
    for cut in range(len(parts) - 1, -1, -1):
        rest = parts[cut:]
        owned = (len(rest) == 1 and rest[0] in TASK_FILES) or (
            len(rest) >= 2 and rest[0] in TASK_DIRS
        )
        if not owned:
            continue
        folder = Path(*parts[:cut]) if cut else Path(".")
        if (folder / TASK_FILE).is_file():
            found = folder
    return found


def tasks_for_files(files: Iterable[Path]) -> list[Path]:
    """The task folders that ``files`` belong to: each once, in a stable (sorted) order.

    Paths keep the form they were given in (pre-commit gives paths relative to the
    repository root), so findings print the same paths the user sees in ``git status``.
    A file that belongs to no task is ignored; a deleted file still maps to its task as long
    as the task's task.json exists.
    """
    seen: dict[Path, Path] = {}
    for file in files:
        task = task_of(Path(file))
        if task is not None:
            seen.setdefault(task.resolve(), task)
    return sorted(seen.values(), key=lambda p: p.as_posix())
