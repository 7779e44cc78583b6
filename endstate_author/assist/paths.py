"""Files around task.json: the fixture's paths, what a path argument points at, which task a
file belongs to.
"""

from __future__ import annotations

from pathlib import Path

from endstate_author.engine.context import walk_tree
from endstate_harness.layout import FIXTURE_DIR, HOLDOUT_DIR, PRUNED_NAMES, SOLUTION_DIR, TASK_FILE


def fixture_paths(root: Path, limit: int = 5000) -> tuple[list[str], list[str]]:
    """(files, folders) of the fixture by forward-slash relative path, pruned names skipped."""
    files: list[str] = []
    folders: list[str] = []
    for rel, entry in walk_tree(root / FIXTURE_DIR, max_entries=limit).items():
        if any(part in PRUNED_NAMES for part in rel.split("/")):
            continue
        (folders if entry.is_dir else files).append(rel)
    return sorted(files), sorted(folders)


def path_target(root: Path, rel: str) -> Path | None:
    """The file a path argument names: in the fixture, else the solution, else the holdout."""
    if not rel or rel.startswith("/") or ".." in rel.split("/") or any(c in rel for c in "*?["):
        return None
    for tree in (FIXTURE_DIR, SOLUTION_DIR, HOLDOUT_DIR):
        candidate = root / tree / rel
        if candidate.exists() and not candidate.is_symlink():
            return candidate
    return None


def task_root_of(path: Path) -> Path | None:
    """The task folder a file belongs to: the nearest ancestor (or itself) holding task.json."""
    for folder in (path, *path.parents) if path.is_dir() else path.parents:
        if (folder / TASK_FILE).is_file():
            return folder
    return None
