"""Shared fixtures for the harness tests: a tiny task fixture tree and a real Docker image.

The Docker tests run against a real daemon (``make test`` starts one with
``scripts/ensure-docker.sh``). When none answers they are skipped, and the reason is printed
so a green run without Docker cannot be mistaken for a run with it.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support import session

# The machine is shared (another test run, an author's prove, a language server): everything
# the tests cause goes to a temp folder of this session's own, before anything below runs,
# and the tests look only there (tests/support/session.py).
session.start()

# A shell starts background jobs with SIGINT ignored (``make test &``, CI runners that detach),
# and an ignored signal stays ignored across exec: the interrupt tests would then send Ctrl-C
# to processes that cannot hear it. A handler of our own is reset to the default on exec, so
# every process these tests start hears SIGINT again, as it does from a terminal.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


SHARED_GROUPS = {
    "tests/editors/test_vscode.py": "vscode",
    "tests/editors/test_vscode_e2e.py": "vscode",
    "tests/test_fresh_install.py": "vscode",
}
"""Test modules that run on one worker of a parallel run, one after the other: the VS Code
files build the .vsix once between them (a session fixture: built once per worker), and the
wheel test_fresh_install builds carries it when it is there, so it is never read while another
worker writes it."""


EACH_ALONE = frozenset({"tests/reliability/test_interrupt.py"})
"""Modules whose tests are units of their own in a parallel run: long (40-75 s each, 50 runs
of the command line apiece) and with no fixture of the module's to share."""
FIRST = ("tests/reliability/test_interrupt.py", "tests/editors/test_precommit.py",
         "tests/editors/test_vscode_e2e.py", "tests/editors/test_vscode.py",
         "tests/test_fresh_install.py", "tests/reliability/test_deep_trees.py",
         "tests/executors/test_ray_cluster.py", "tests/prove/test_mutants.py",
         "tests/reliability/test_walls_round2_docker.py")
"""The longest units (30 s and more), run first: a parallel run hands units out in the
order the tests are collected, and a long one handed out last keeps one worker busy alone."""


def group_of(nodeid: str) -> str:
    """The unit a parallel run hands to one worker whole: the test's module (so a module's
    fixtures are built once), the group it shares (:data:`SHARED_GROUPS`), or the test
    itself (:data:`EACH_ALONE`)."""
    module = nodeid.partition("::")[0]
    if module in EACH_ALONE:
        return nodeid
    return SHARED_GROUPS.get(module, module)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The :data:`FIRST` modules first, in that order; the rest as collected."""
    rank = {module: index for index, module in enumerate(FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.partition("::")[0], len(FIRST)))


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """A parallel run (``scripts/run-tests.sh``: pytest-xdist) hands each :func:`group_of`
    whole to one worker. Why not ``--dist loadgroup``: its ``xdist_group`` marks rename the
    test ids, which pytest 9 no longer lets a plugin do, so they group nothing there."""
    # deferred: only a parallel run (which has pytest-xdist) asks for a scheduler
    from xdist.scheduler import LoadScopeScheduling

    class ByGroup(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            return group_of(nodeid)

    return ByGroup(config, log)


def make_fixture_tree(root: Path) -> Path:
    """A small fixture: a package with a bug, its tests, a binary file, an in-tree symlink,
    and one of every pruned kind of folder (which must never reach a sandbox)."""
    (root / "pkg" / "__pycache__").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / ".git").mkdir()
    (root / "node_modules" / "left").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (root / "pkg" / "__pycache__" / "calc.cpython-311.pyc").write_bytes(b"\x00stale")
    (root / "tests" / "test_calc.py").write_text(
        "from pkg.calc import add\n\n\ndef test_add():\n    assert add(2, 2) == 4\n"
    )
    (root / "README.md").write_text("# calc\n")
    (root / "data.bin").write_bytes(bytes(range(256)))
    (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (root / "node_modules" / "left" / "index.js").write_text("module.exports = 1\n")
    (root / "run.sh").write_text("#!/bin/sh\necho run\n")
    (root / "run.sh").chmod(0o755)
    os.symlink("pkg/calc.py", root / "calc_link.py")
    return root


@pytest.fixture
def fixture_tree(tmp_path: Path) -> Path:
    """A fresh tiny fixture tree (see :func:`make_fixture_tree`)."""
    return make_fixture_tree(tmp_path / "fixture")


def _skip(reason: str) -> None:
    print(f"\nSKIPPING docker tests: {reason}", file=sys.stderr)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def docker_image() -> Iterator[str]:
    """The image the Docker tests use: ``$ENDSTATE_SANDBOX_IMAGE`` or the local one that
    ``scripts/ensure-docker.sh`` builds. Skips (with the reason printed) when no daemon answers
    or the image is missing; leaves no container of this session behind."""
    from endstate_harness.sandbox.docker.container import (
        IMAGE_ENV,
        LABEL,
        LOCAL_IMAGE,
        SandboxError,
        connect,
    )

    try:
        client = connect(timeout_s=5)
    except SandboxError as exc:
        _skip(f"{exc} (run: sudo bash scripts/ensure-docker.sh)")
    image = os.environ.get(IMAGE_ENV) or LOCAL_IMAGE
    try:
        client.images.get(image)
    except Exception as exc:
        client.close()
        _skip(f"image {image!r} is not available ({exc}); run: sudo bash scripts/ensure-docker.sh")
    # this session's containers only: another run's on the same daemon are not our leak
    before = session.containers(client, f"{LABEL}=1")
    yield image
    after = session.containers(client, f"{LABEL}=1")
    client.close()
    leaked = after - before
    assert not leaked, f"docker tests left sandbox containers behind: {sorted(leaked)}"


def require_walls() -> None:
    """Skip (printing why) when bubblewrap truly cannot start here."""
    from endstate_harness.sandbox.walls import status

    found = status()
    if not found.available:
        print(f"\nSKIPPING walled tests: {found.reason}", file=sys.stderr)
        pytest.skip(found.reason)


@pytest.fixture(params=[True, False], ids=["walled", "no-walls"])
def walls(request: pytest.FixtureRequest) -> bool:
    """Both ways the local sandbox runs: behind bubblewrap's walls, and without them (the
    fallback where bubblewrap cannot start). The walled run skips, saying why, only where
    bubblewrap cannot start."""
    if request.param:
        require_walls()
    return bool(request.param)


E2E_SECONDS: dict[str, float] = {}
"""Each VS Code test file's time (tests/editors): its build is the suite's slowest setup."""


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Adds up each VS Code file's time; called where the summary is written (in a parallel
    run, the controller, from the workers' reports)."""
    name = report.nodeid.partition("::")[0].rpartition("/")[2]
    if name in ("test_vscode.py", "test_vscode_e2e.py"):
        E2E_SECONDS[name] = E2E_SECONDS.get(name, 0.0) + report.duration


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """The VS Code tests' wall time (the .vsix build counts in test_vscode.py's, if it ran)."""
    for name, seconds in sorted(E2E_SECONDS.items()):
        terminalreporter.write_line(f"{name}: {seconds:.1f} s")
