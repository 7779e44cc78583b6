"""Fixtures the prove tests share: a cache folder of the test's own, and a suite to write
tasks into (tests/rules/conftest's TaskBuilder: the guide's sound chunker task by default)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.rules.conftest import TaskBuilder


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    return tmp_path / "cache"


@pytest.fixture
def build(tmp_path: Path) -> TaskBuilder:
    return TaskBuilder(tmp_path / "suite")
