"""The authoring guide's sound task, written to disk: the neighbour every rule test mutates.

``TaskBuilder(base)(...)`` writes a task folder whose every part defaults to the guide's
example (the four assertions, a holdout, a solution); ``good(**changes)`` is its manifest with
top-level keys replaced. Shared by ``tests/`` and ``bench/`` (see :mod:`tests.support`).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

GUIDE_GRADERS: list[dict[str, Any]] = [
    {
        "name": "endstate.evals.graders:command_succeeds",
        "args": {"command": "python -m unittest discover -s tests -t . -q"},
    },
    {
        "name": "endstate.evals.graders:files_unchanged",
        "args": {"paths": ["tests/test_chunk.py"]},
    },
    {"name": "endstate.evals.graders:no_new_skips"},
    {
        "name": "endstate.evals.graders:changed_paths_within",
        "args": {"allowed": ["chunker/*", "*.md"]},
    },
]

GOOD_MANIFEST: dict[str, Any] = {
    "id": "fix-chunk-off-by-one",
    "category": "bug-fix",
    "description": "chunk() silently drops the final partial chunk.",
    "max_steps": 20,
    "timeout_s": 600.0,
    "budget": {"max_context_tokens": 60000, "reserve_output_tokens": 4000},
    "graders": GUIDE_GRADERS,
}

FIXTURE: dict[str, str] = {
    "chunker/__init__.py": "from chunker.core import chunk\n",
    "chunker/core.py": (
        "def chunk(items, size):\n"
        "    return [items[i:i + size] for i in range(0, len(items) - size + 1, size)]\n"
    ),
    "tests/__init__.py": "",
    "tests/test_chunk.py": (
        "import unittest\n\nfrom chunker import chunk\n\n\n"
        "class ChunkTest(unittest.TestCase):\n"
        "    def test_partial_tail(self):\n"
        "        self.assertEqual(chunk([1, 2, 3], 2), [[1, 2], [3]])\n"
    ),
}

SOLUTION: dict[str, str] = {
    "chunker/core.py": (
        "def chunk(items, size):\n"
        "    return [items[i:i + size] for i in range(0, len(items), size)]\n"
    ),
}

HOLDOUT: dict[str, str] = {
    "tests/test_holdout_chunk.py": (
        "import unittest\n\nfrom chunker import chunk\n\n\n"
        "class HoldoutTest(unittest.TestCase):\n"
        "    def test_single(self):\n"
        "        self.assertEqual(chunk([1], 5), [[1]])\n"
    ),
}


def write_tree(root: Path, files: Mapping[str, str | bytes]) -> None:
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")


class TaskBuilder:
    """Writes a task folder; every part defaults to the guide's sound example."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.count = 0

    def __call__(
        self,
        manifest: dict[str, Any] | str | bytes | None = None,
        *,
        name: str | None = None,
        prompt: str | None = "Make the failing test in tests/ pass without editing it.\n",
        fixture: dict[str, str | bytes] | None = None,
        solution: dict[str, str | bytes] | None = None,
        holdout: dict[str, str | bytes] | None = None,
        extra: dict[str, str | bytes] | None = None,
        suite: Path | None = None,
    ) -> Path:
        self.count += 1
        data: Any = copy.deepcopy(GOOD_MANIFEST) if manifest is None else manifest
        folder_name = (
            name or (data.get("id") if isinstance(data, dict) else None) or f"task-{self.count}"
        )
        root = (suite or self.base) / folder_name
        root.mkdir(parents=True, exist_ok=True)
        if isinstance(data, bytes):
            (root / "task.json").write_bytes(data)
        elif isinstance(data, str):
            (root / "task.json").write_text(data, encoding="utf-8")
        else:
            (root / "task.json").write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
        if prompt is not None:
            (root / "prompt.md").write_text(prompt, encoding="utf-8")
        write_tree(root / "fixture", FIXTURE if fixture is None else fixture)
        if solution != {}:
            write_tree(root / "solution", SOLUTION if solution is None else solution)
        if holdout != {}:
            write_tree(root / "holdout", HOLDOUT if holdout is None else holdout)
        if extra:
            write_tree(root, extra)
        return root


def good(**changes: Any) -> dict[str, Any]:
    """The guide's manifest with top-level keys replaced (None deletes a key)."""
    data = copy.deepcopy(GOOD_MANIFEST)
    for key, value in changes.items():
        if value is None:
            data.pop(key, None)
        else:
            data[key] = value
    return data
