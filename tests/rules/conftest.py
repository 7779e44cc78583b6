"""Fixtures for rule tests: build task folders on disk from small dicts.

``good_task`` follows the authoring guide exactly (the four assertions, a holdout, a
solution); a rule test mutates one thing and asserts the code appears, and its near-miss
asserts the code does not appear on the sound neighbour. The task itself is written by
:mod:`tests.support.tasks` (shared with ``bench/``), re-exported here.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from endstate_author.engine.diagnostics import Diagnostic
from endstate_author.lint.run import lint_paths
from tests.support.tasks import (
    FIXTURE,
    GOOD_MANIFEST,
    GUIDE_GRADERS,
    HOLDOUT,
    SOLUTION,
    TaskBuilder,
    good,
    write_tree,
)

__all__ = [
    "FIXTURE",
    "GOOD_MANIFEST",
    "GUIDE_GRADERS",
    "HOLDOUT",
    "SOLUTION",
    "Lint",
    "TaskBuilder",
    "codes",
    "good",
    "lint",
    "make_task",
    "write_tree",
]


@pytest.fixture
def make_task(tmp_path: Path) -> TaskBuilder:
    return TaskBuilder(tmp_path / "suite")


def lint(*paths: Path) -> list[Diagnostic]:
    return lint_paths(list(paths), isolated=True).diagnostics


def codes(*paths: Path) -> list[str]:
    return [d.code for d in lint(*paths)]


Lint = Callable[..., list[Diagnostic]]
