"""A small suite on disk for the editor's unit tests: one task with a fixture, a solution, a
holdout and a suite grader module, so every answer can be asserted exactly.

Texts under test mark the cursor with ``|`` (:func:`at`), so a case reads like the buffer
an author has in front of them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from endstate_author.assist import Graders

CHECKS_PY = '''\
def shape(sandbox, *, paths: list[str], limit: int, exact: bool, label: str, note: str = "x"):
    """Check the shape."""
    return None


def helper(value):
    return value
'''
"""A suite grader module: ``checks:shape`` takes one argument of each kind a snippet knows."""

SHAPE_SIGNATURE = (
    "def shape(sandbox, *, paths: list[str], limit: int, exact: bool, label: str, "
    "note: str = 'x') -> Verdict"
)

FILES = {
    "checks.py": CHECKS_PY,
    "t1/prompt.md": "Fix it.\n",
    "t1/fixture/src/__init__.py": "",
    "t1/fixture/src/app.py": "VALUE = 1\n",
    "t1/fixture/tests/__init__.py": "",
    "t1/fixture/tests/test_app.py": "import unittest\n",
    "t1/fixture/__pycache__/app.cpython-311.pyc": "",
    "t1/solution/src/app.py": "VALUE = 2\n",
    "t1/solution/src/extra.py": "EXTRA = 3\n",
    "t1/holdout/tests/test_more.py": "import unittest\n",
}
"""The suite below ``tmp_path/suite``: the task is ``t1``."""


def at(text: str) -> tuple[bytes, int]:
    """A buffer with its cursor marked by ``|`` → (bytes without the mark, byte offset)."""
    assert text.count("|") == 1, text
    before, after = text.split("|")
    return (before + after).encode("utf-8"), len(before.encode("utf-8"))


def span(text: str, needle: str) -> tuple[int, int]:
    """The byte range of ``needle``'s first occurrence in ``text`` (cursor mark removed)."""
    data = text.replace("|", "").encode("utf-8")
    start = data.index(needle.encode("utf-8"))
    return start, start + len(needle.encode("utf-8"))


@pytest.fixture
def root(tmp_path: Path) -> Path:
    suite = tmp_path / "suite"
    for rel, content in FILES.items():
        path = suite / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
    task = suite / "t1"
    (task / "task.json").write_text("{}\n", encoding="utf-8")
    return task


@pytest.fixture
def graders(root: Path) -> Graders:
    return Graders.for_task(root)
