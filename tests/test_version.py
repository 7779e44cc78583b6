"""The version is written once (``endstate_author.__version__``); everything else that shows
one reads it or is held to it here."""

from __future__ import annotations

import importlib.metadata
import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import endstate_lsp
from endstate_author import __version__

ROOT = Path(__file__).resolve().parent.parent


def test_the_version_is_written_once() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in project["project"] and project["project"]["dynamic"] == ["version"]
    assert project["tool"]["hatch"]["version"]["path"] == "endstate_author/__init__.py"
    assert re.fullmatch(r"\d+\.\d+\.\d+", __version__)
    # the installed metadata (what the harness reads for the image tag) is this version
    assert importlib.metadata.version("endstate-author") == __version__
    assert endstate_lsp.__version__ == __version__


def test_the_vscode_extension_has_the_version() -> None:
    package = json.loads((ROOT / "editors/vscode/package.json").read_text())
    lock = json.loads((ROOT / "editors/vscode/package-lock.json").read_text())
    assert package["version"] == lock["version"] == lock["packages"][""]["version"] == __version__


def test_the_changelog_has_the_version_and_an_unreleased_section() -> None:
    heads = re.findall(r"^## \[([^\]]+)\]", (ROOT / "CHANGELOG.md").read_text(), re.M)
    assert heads[:2] == ["Unreleased", __version__], heads


def test_version_flag() -> None:
    shown = subprocess.run([sys.executable, "-m", "endstate_author", "--version"],
                           capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0 and shown.stdout == f"endstate-author {__version__}\n", shown
