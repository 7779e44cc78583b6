"""Fixtures shared by the VS Code tests: the .vsix built once per session, and each test's
outcome on its item (the e2e tests save a screenshot when theirs failed).

The build (``scripts/build-vscode.sh``: npm ci, node's unit tests, esbuild, vsce package) is
the slow part of both test_vscode.py and test_vscode_e2e.py, so it runs once for both (and
on one worker of a parallel run: tests/conftest.py's ``SHARED_GROUPS``). The time each file
took is printed at the end of the run (tests/conftest.py).
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXT = ROOT / "editors" / "vscode"


def skip(reason: str) -> None:
    print(f"SKIP REASON: {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def vsix() -> Path:
    if shutil.which("npm") is None or shutil.which("node") is None:
        skip("node/npm are not installed (the Makefile's system step installs them)")
    build = subprocess.run(
        ["bash", str(ROOT / "scripts" / "build-vscode.sh")],
        capture_output=True,
        text=True,
        timeout=840,
    )
    if build.returncode != 0:
        reachable = subprocess.run(
            ["npm", "ping"], cwd=EXT, capture_output=True, text=True, timeout=60
        )
        if reachable.returncode != 0:
            skip(f"the npm registry cannot be reached, npm ci cannot install: {reachable.stderr}")
        pytest.fail(f"build-vscode.sh failed:\n{build.stdout[-4000:]}\n{build.stderr[-4000:]}")
    print(build.stdout.splitlines()[-1])
    found = sorted((EXT / "dist").glob("*.vsix"))
    assert len(found) == 1, found
    return found[0]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[Any]) -> Iterator[Any]:
    outcome: Any = yield
    report = outcome.get_result()
    setattr(item, f"rep_{report.when}", report)
