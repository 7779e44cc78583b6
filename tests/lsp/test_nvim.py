"""A real editor: headless Neovim runs the documented configuration *verbatim* (the ```lua
block of README.md and of docs/guide/editors.md), so ``require("endstate_author")`` is found
the way a user's Neovim finds it, and the server's findings are read back through
``vim.diagnostic.get``. ``endstate-author`` is the development install's, on PATH."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tests.rules.conftest import GOOD_MANIFEST, TaskBuilder
from tests.support.nvim import assert_es101_at_max_step, nvim_or_skip, run_config
from tests.support.snippets import ROOT, fenced

DOCS = [ROOT / "README.md", ROOT / "docs" / "guide" / "editors.md"]


def documented_config(doc: Path) -> str:
    return fenced(doc, "lua", 'require("endstate_author")')


def test_the_documented_configurations_are_one() -> None:
    assert len({documented_config(doc) for doc in DOCS}) == 1


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_neovim_shows_server_diagnostics_as_documented(doc: Path, tmp_path: Path) -> None:
    nvim_or_skip()
    root = TaskBuilder(tmp_path / "suite")(dict(GOOD_MANIFEST, max_step=5))
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    got = run_config(documented_config(doc), root / "task.json", tmp_path, env)
    assert_es101_at_max_step(got, root / "task.json")
    assert got["clients"] == 1
