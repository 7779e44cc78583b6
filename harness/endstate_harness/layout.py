"""The names of a task folder's parts, the format's vocabulary (categories, stop reasons,
counters), and how task folders are found — without the pydantic model.

Kept apart from :mod:`endstate_harness.task` (which builds the pydantic model at import, a
few hundred milliseconds) so that a caller that only needs to find task folders — a cached
``lint`` that answers without reading a manifest — does not pay for the model.
"""

from __future__ import annotations

import os
from pathlib import Path

TASK_FILE = "task.json"
PROMPT_FILE = "prompt.md"
ORACLE_FILE = "oracle.json"
FIXTURE_DIR = "fixture"
HOLDOUT_DIR = "holdout"
SOLUTION_DIR = "solution"
DEFECTS_DIR = "defects"

PRUNED_NAMES = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        ".endstate",
        "__pycache__",
        ".pytest_cache",
        ".mypy_cache",
        ".ruff_cache",
        ".venv",
        "node_modules",
    }
)
"""Names pruned at every level when a tree is copied into a sandbox (task-format.md §1)."""

CATEGORIES: tuple[str, ...] = (
    "bug-fix", "feature", "refactor", "compaction", "permissioning", "recovery", "cost"
)  # fmt: skip
"""What a task may measure (task.json's ``category``)."""

STOP_REASONS: tuple[str, ...] = (
    "end_turn", "tool_use", "max_tokens", "budget_exceeded", "max_steps", "error"
)  # fmt: skip
"""Why an agent run stopped (``requires.stop_reason``)."""

COUNTERS: dict[str, str] = {
    "compaction_events": "compaction events recorded by the context manager during the run",
    "denied_calls": "tool calls the permission policy denied",
    "unsettled_calls": "non-idempotent tool calls left with an unknown outcome by a resume",
    "steps": "agent loop steps, i.e. model calls",
    "input_tokens": "prompt tokens summed over every model call of the run",
    "output_tokens": "completion tokens summed over every model call of the run",
    "total_tokens": "input plus output tokens summed over the run",
}
"""The run-level counters ``requires`` may bound, with what each counts."""


def find_task_dirs(
    root: Path | str, scanned: list[tuple[str, os.stat_result | None]] | None = None
) -> list[Path]:
    """Every folder holding a task.json (a file, or a folder by mistake) below ``root`` (or
    ``root`` itself), sorted.

    Pruned names and symlinked directories are not descended into, so a symlink loop
    cannot make discovery run forever. Kinds come from the directory listing (no stat per
    entry): a suite of a thousand tasks is found in a few milliseconds. ``scanned`` collects
    every folder listed, with its status taken just before (None when it had none): what
    the result depends on, for a caller that keeps it while those folders are unchanged.
    """
    root = Path(root)
    if (root / TASK_FILE).is_file() or (root / TASK_FILE).is_dir():
        return [root]
    found: list[str] = []
    skip = (FIXTURE_DIR, HOLDOUT_DIR, SOLUTION_DIR, DEFECTS_DIR)
    stack = [str(root)]
    while stack:
        folder = stack.pop()
        if scanned is not None:
            try:
                scanned.append((folder, os.stat(folder)))
            except OSError:
                scanned.append((folder, None))
        try:
            with os.scandir(folder) as it:
                entries = list(it)
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.name in PRUNED_NAMES or entry.is_symlink():
                    continue
                if entry.name == TASK_FILE:
                    # a task.json that is a folder is still a task, whose manifest cannot
                    # load: its own finding (ES001), as when the task itself is named
                    found.append(folder)
                elif entry.is_dir() and entry.name not in skip:
                    stack.append(entry.path)
            except OSError:
                continue
    # in Path order: by components (all share ``root``'s spelling, so its split suffices)
    return [Path(f) for f in sorted(set(found), key=lambda f: f.split(os.sep))]
