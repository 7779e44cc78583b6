"""A sealed variant reads exactly as a sandbox sealed on the variant's own tree."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from endstate_harness.errors import SandboxError
from endstate_harness.sandbox.local import LocalSandbox
from endstate_harness.sandbox.variant import variant_of


def _tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def _sealed(fixture: Path, solution: Path, holdout: Path, mutate: dict[str, bytes] | None = None
            ) -> LocalSandbox:
    box = LocalSandbox(fixture)
    box.setup()
    box.stage(solution)
    for rel, data in (mutate or {}).items():
        (box.live / rel).write_bytes(data)
    box.seal()
    box.stage(holdout)
    return box


@pytest.fixture
def task(tmp_path: Path) -> tuple[Path, Path, Path]:
    fixture = _tree(tmp_path / "fixture", {
        "pkg/__init__.py": "", "pkg/calc.py": "def add(a, b):\n    return 0\n",
        "tests/test_calc.py": "import unittest\n", "README.md": "calc\n"})
    os.chmod(fixture / "pkg" / "calc.py", 0o755)
    solution = _tree(tmp_path / "solution", {"pkg/calc.py": "def add(a, b):\n    return a + b\n"})
    holdout = _tree(tmp_path / "holdout", {"tests/test_more.py": "import unittest\n"})
    return fixture, solution, holdout


def test_a_variant_reads_as_its_own_sealed_tree(task: tuple[Path, Path, Path]) -> None:
    mutant = {"pkg/calc.py": b"def add(a, b):\n    return a - b\n"}
    base = _sealed(*task)
    own = _sealed(*task, mutate=mutant)
    try:
        view = variant_of(base, dict(mutant))
        assert view is not None
        assert view.tree_hash() == own.tree_hash() != base.tree_hash()
        assert view.end_state_files() == own.end_state_files()
        assert view.changed_paths() == own.changed_paths()
        for rel in ("pkg/calc.py", "README.md", "pkg/../pkg/calc.py", "missing.py"):
            assert view.read_text(rel) == own.read_text(rel)
            assert view.exists(rel) == own.exists(rel)
            assert view.fixture_text(rel) == own.fixture_text(rel)
        assert view.holdout_files() == own.holdout_files()
        assert view.fixture_files() == own.fixture_files()
        assert view.end_state_problem() is None
        with pytest.raises(SandboxError):
            view.run("true")
        assert base.read_text("pkg/calc.py").endswith("a + b\n"), "the base is untouched"
    finally:
        base.close()
        own.close()


def test_no_variant_where_a_tree_would_have_to_be_built(task: tuple[Path, Path, Path]) -> None:
    base = _sealed(*task)
    unsealed = LocalSandbox(task[0])
    unsealed.setup()
    try:
        assert variant_of(base, {"pkg/new.py": b"x = 1\n"}) is None  # a file it adds
        assert variant_of(base, {"pkg/calc.py": None}) is None  # one it removes
        assert variant_of(base, {"pkg": b"x"}) is None  # a folder
        assert variant_of(base, {"../calc.py": b"x"}) is None  # out of the tree
        assert variant_of(unsealed, {"pkg/calc.py": b"x"}) is None
    finally:
        base.close()
        unsealed.close()
