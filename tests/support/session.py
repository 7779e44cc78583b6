"""This test session's own corner of a shared machine: a private temp folder, and the Docker
containers that work under it.

Why: the machine is shared (another ``make test``, an author's prove, a language server), and
a test that lists machine-wide state counts what others made: a container another run left,
another process's ``endstate-lsp-*`` folder. So the session makes a temp folder of its own
and points ``TMPDIR`` at it before anything runs (:func:`start`, called by tests/conftest.py):
every process the tests start inherits it, so every scratch folder, sandbox, judge, zygote and
Ray session folder the tests cause lies in it. A container is this session's when a folder it
mounts lies in it: every sandbox container bind-mounts its live tree from a scratch folder
(ours, endstate's own ``docker run`` alike), so the mount names the session as a label value
unique to it would, without a test hook in the product.
"""

from __future__ import annotations

import atexit
import os
import tempfile
from pathlib import Path
from typing import Any

PREFIX = "es-tests-"
"""Short: Ray puts its sockets below the temp folder, and a socket's path has a 107-byte cap."""
_ENV = "ENDSTATE_TEST_SESSION_TMP"
"""The folder, for processes the session starts (a nested session keeps its parent's)."""
_WORKER = "ENDSTATE_TEST_SESSION_WORKER"
"""The pytest-xdist worker whose folder :data:`_ENV` is ("" for a run without workers)."""
_XDIST_WORKER = "PYTEST_XDIST_WORKER"
"""Set by pytest-xdist in each worker (``gw0``, ``gw1``...), and inherited by what it starts."""


def start() -> Path:
    """Make the session's private temp folder and point ``TMPDIR`` (and this process's
    :mod:`tempfile`) at it; removed when the session's process exits. Idempotent, and a
    nested session keeps its parent's.

    Grading trees follow it (with a TMPDIR set they go there, not to /dev/shm): a test that
    gives a run a TMPDIR of its own to watch (tests/reliability) still finds them in it, which
    a session-wide ``ENDSTATE_SCRATCH`` would take away."""
    known = os.environ.get(_ENV)
    worker = os.environ.get(_XDIST_WORKER, "")
    if (known and Path(known).is_dir() and os.environ.get("TMPDIR") == known
            and os.environ.get(_WORKER, "") == worker):
        tempfile.tempdir = known
        return Path(known)
    # a worker of a parallel run (pytest-xdist) is a session of its own: its folder beside
    # its controller's, never inside it (Ray's socket paths are capped), so a worker counts
    # only the containers and processes its own tests made
    parent = Path(known).parent if known and worker else Path(tempfile.gettempdir())
    _sweep(parent)
    folder = tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-", dir=parent)
    os.environ["TMPDIR"] = os.environ[_ENV] = folder
    os.environ[_WORKER] = worker
    tempfile.tempdir = folder
    owner = os.getpid()

    def remove() -> None:
        if os.getpid() == owner:  # a forked child exiting leaves the session's folder alone
            _remove(Path(folder))

    atexit.register(remove)
    return Path(folder)


def _sweep(parent: Path) -> None:
    """Remove the folders of earlier sessions whose process is gone (one killed outright has
    no exit to remove them at): named ``es-tests-PID-...``, so only a session's own."""
    try:
        names = [n for n in os.listdir(parent) if n.startswith(PREFIX)]
    except OSError:
        return
    for name in names:
        owner = name[len(PREFIX):].partition("-")[0]
        if owner.isdigit() and not _alive(int(owner)):
            _remove(parent / name)


def _remove(folder: Path) -> None:
    """Remove ``folder`` whatever its depth: a test may leave a tree deeper than
    ``shutil.rmtree``'s recursion reaches (the deep-tree tests build 1,100 levels), and a
    RecursionError here would fail every later session's start."""
    # deferred: the harness is imported by the tests anyway, after the session started
    from endstate_harness.fdtree import remove_tree

    try:
        remove_tree(folder)
    except OSError:
        pass


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # someone else's: alive
    return True


def tmp() -> Path:
    """The session's private temp folder (:func:`start` made it)."""
    return Path(os.environ.get(_ENV) or tempfile.gettempdir())


def folders() -> list[Path]:
    """Every folder of the session's own where processes it starts make theirs."""
    return [tmp()]


def mounts_here(attrs: dict[str, Any]) -> bool:
    """Whether a container (its ``docker ps`` attributes) mounts a folder of this session."""
    roots = [str(f.resolve()) for f in folders()]
    for mount in attrs.get("Mounts") or []:
        source = str(mount.get("Source") or "")
        if any(source == root or source.startswith(root + "/") for root in roots):
            return True
    return False


def containers(client: Any, label: str | None = None) -> set[str]:
    """Ids of this session's containers (with ``label`` when given, e.g. ``endstate-author=1``).
    Sparse: no inspect per container, so one removed meanwhile is no error."""
    filters = {"label": label} if label else {}
    listed = client.containers.list(all=True, sparse=True, filters=filters)
    return {c.id or "" for c in listed if mounts_here(c.attrs)}
