"""Where a suite's own grader modules are imported from (task-format.md §7)."""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from pathlib import Path


def grader_search_paths(
    task_root: Path,
    *,
    suite_root: Path | None = None,
    grader_paths: Sequence[Path] = (),
) -> list[Path]:
    """The folders suite grader modules are imported from, in the order of task-format.md §7:
    the task's folder, the suite folder, the project root (nearest folder up from the task
    holding pyproject.toml or .git), then the configured grader-paths. Duplicates dropped."""
    candidates: list[Path] = [task_root]
    if suite_root is not None:
        candidates.append(suite_root)
    root = project_root(task_root)
    if root is not None:
        candidates.append(root)
    candidates.extend(grader_paths)
    seen: dict[Path, None] = {}
    for path in candidates:
        seen.setdefault(Path(path).resolve(), None)
    return list(seen)


def project_root(start: Path) -> Path | None:
    """Nearest folder at or above ``start`` holding pyproject.toml or .git."""
    found = _project_root(os.path.realpath(start))
    return Path(found) if found is not None else None


@functools.lru_cache(maxsize=512)
def _project_root(folder: str) -> str | None:
    # cached per folder: a suite of a thousand tasks shares its parents, and lint asks for
    # every task (a project root appearing mid-session is seen after a restart)
    if os.path.isfile(os.path.join(folder, "pyproject.toml")) or os.path.exists(
        os.path.join(folder, ".git")
    ):
        return folder
    parent = os.path.dirname(folder)
    return None if parent == folder else _project_root(parent)


# ----- grading a task -------------------------------------------------------------------------
