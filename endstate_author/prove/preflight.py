"""Whether a task that loads can be graded at all, asked once before any check is planned.

Why: a task lint already rejects for a reason every check shares — a grader whose arguments
do not fit its signature, a link out of the task's trees, a fifo no sandbox can copy — used to
be proved check by check: each of its 60-90 checks came back *unassessed* with the same
sentence, and the summary ended with ES908's "start Docker, build the image", which is the
wrong fix. One cause is one message: prove reports the lint finding that stops it, once.

The look here is cheap (the harness's own resolution of each grader entry, and an ``lstat``
walk of the trees, links never followed): nothing of lint is imported unless it finds a
suspect, so a sound task pays a few milliseconds. What it finds is only a suspicion; the
finding itself comes from lint's rules (``findings.stopped``), so prove stops exactly where
lint reports an error and never on its own guess.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from endstate_author.engine.trees import walk_tree
from endstate_harness.errors import GraderContractError
from endstate_harness.graders.resolver import resolve
from endstate_harness.task import Task

GRADERS = "graders"
"""A grader entry the harness cannot resolve: lint's ES0-ES2 errors say which and where."""
LINKS = "links"
"""A link in the task's trees: lint's ES410 error says when it leads out of them (the sandbox
refuses to copy such a tree)."""
SPECIAL = "special"
"""A fifo, socket or device in the task's trees, which no sandbox copies, or a tree nested
deeper than any walk of it should go: lint's ES414."""
DEPTH_LIMIT = 100
"""As lint's ES414 (``rules.es4_directory.DEPTH_LIMIT``): deeper, and the walks of the task's
own folder that come after this (the cache's key, the mutants) would meet Python's recursion
limit."""


def grader_suspects(task: Task, search_paths: Sequence[Path]) -> set[str]:
    """:data:`GRADERS` when a grader entry of ``task`` does not resolve (the harness's own
    resolution, as every check would do it)."""
    for spec in task.graders:
        try:
            resolve(spec, search_paths=search_paths)
        except GraderContractError:
            return {GRADERS}
    return set()


def tree_suspects(task: Task) -> set[str]:
    """:data:`LINKS` and :data:`SPECIAL` as the task's trees hold them. Cheap enough to ask
    before the proof cache, whose key walks these trees."""
    found: set[str] = set()
    roots = [task.fixture, task.holdout, task.solution]
    defects = task.root / "defects"
    try:
        roots.extend(entry for entry in defects.iterdir() if entry.is_dir())
    except OSError:
        pass
    for root in roots:
        if root is not None:
            found |= _odd_entries(root)
    return found


def _odd_entries(root: Path) -> set[str]:
    """:data:`LINKS` and :data:`SPECIAL` as the tree at ``root`` holds them, read by lint's own
    walk (iterative, never through a link), so prove and lint see the same entries."""
    found: set[str] = set()
    for rel, entry in walk_tree(root).items():
        if rel.count("/") >= DEPTH_LIMIT:
            found.add(SPECIAL)
        if entry.is_symlink:
            found.add(LINKS)
        elif entry.special:
            found.add(SPECIAL)
    return found
