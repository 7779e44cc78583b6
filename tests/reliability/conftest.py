"""Shared machinery for the reliability tests: tiny suites, tree hashes, leftover hunting.

Everything here inspects the *real* system after a run (the temp dir, ``/proc``, the Docker
daemon), because the promise under test is about what a user finds on their machine after
an interrupted or hostile run, not about what the code believes it cleaned up.

Attribution is what makes the checks safe to run beside other tests on a shared machine:
every run gets a private ``TMPDIR``/``HOME`` and a unique marker in its environment, and a
container is attributed by the owner pid the sandbox writes into its labels.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import stat
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.rules.conftest import GOOD_MANIFEST, TaskBuilder

REPO = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-m", "endstate_author"]
MARK_ENV = "ENDSTATE_RELIABILITY_MARK"
"""An environment variable carrying a per-run token, so a process a run left behind can be
found in ``/proc`` without confusing it with another test's."""


def tree_digest(root: Path) -> str:
    """A hash of everything under ``root``: paths, kinds, modes, bytes, symlink targets.

    Links are hashed as their target text and never followed, so a hostile link cannot make
    the digest read outside the tree. Used to prove a task folder was not modified.
    """
    digest = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames.sort()
        for name in sorted([*dirnames, *filenames]):
            path = Path(dirpath, name)
            rel = path.relative_to(root).as_posix()
            info = path.lstat()
            digest.update(f"{rel}\0{stat.S_IFMT(info.st_mode)}\0{info.st_mode & 0o7777}\0".encode())
            if stat.S_ISLNK(info.st_mode):
                digest.update(os.readlink(path).encode("utf-8", "surrogateescape"))
            elif stat.S_ISREG(info.st_mode):
                digest.update(path.read_bytes())
            digest.update(b"\1")
    return digest.hexdigest()


def build_suite(base: Path, ids: list[str]) -> Path:
    """A suite of the authoring guide's sound task, once per id (tiny: runs in ~1 s each)."""
    builder = TaskBuilder(base)
    for task_id in ids:
        manifest: dict[str, Any] = copy.deepcopy(GOOD_MANIFEST)
        manifest["id"] = task_id
        manifest["timeout_s"] = 60.0
        builder(manifest, name=task_id)
    return base


def write_task(root: Path, manifest: dict[str, Any], files: dict[str, str]) -> Path:
    """A task folder from a manifest and ``{relative path: text}`` (prompt, fixture, ...)."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "task.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


# ----------------------------------------------------------------------------- leftovers


def marked_processes(marker: str, under: Path | None = None) -> list[str]:
    """Live processes carrying ``marker`` in their environment, or running with a working
    directory below ``under`` (sandbox commands get a clean environment, so the marker does
    not reach them; their cwd, the scratch folder inside the private temp dir, does)."""
    found = []
    needle = f"{MARK_ENV}={marker}".encode()
    prefix = str(under.resolve()) if under is not None else None
    me = os.getpid()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        try:
            if (entry / "stat").read_text().split(")")[-1].split()[0] == "Z":
                continue  # a zombie holds no resources and is only waiting to be reaped
            hit = needle in (entry / "environ").read_bytes().split(b"\0")
            if not hit and prefix is not None:
                cwd = os.readlink(entry / "cwd")
                hit = cwd == prefix or cwd.startswith(prefix + "/")
            if hit:
                cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                found.append(f"pid {entry.name}: {cmd.strip()[:200]}")
        except (OSError, IndexError):
            continue  # gone meanwhile, or not ours to read
    return found


def processes_running(needle: str) -> list[str]:
    """Live (non-zombie) processes whose command line contains ``needle`` — including the
    ones inside containers, which share this kernel's ``/proc``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            if needle in cmd and "pytest" not in cmd:
                if (entry / "stat").read_text().split(")")[-1].split()[0] != "Z":
                    found.append(f"pid {entry.name}: {cmd.strip()[:200]}")
        except (OSError, IndexError):
            continue
    return found


def containers_of(pid: int) -> list[str]:
    """Sandbox containers (running or not) whose owner label is ``pid``."""
    from endstate_harness.sandbox.docker.container import LABEL, PID_LABEL, connect

    client = connect(timeout_s=30)
    try:
        # The low-level call: the high-level list inspects each container afterwards and
        # fails when one is removed in between (which is what a cleanup does).
        found = client.api.containers(
            all=True, filters={"label": [f"{LABEL}=1", f"{PID_LABEL}={pid}"]}
        )
        return [f"{c['Id'][:12]} ({c.get('State', '?')})" for c in found]
    finally:
        client.close()


def remove_containers_of(pid: int) -> None:
    """Force-remove what :func:`containers_of` finds, so one failed run cannot pollute the next
    (the failure has been recorded by then)."""
    from endstate_harness.sandbox.docker.container import LABEL, PID_LABEL, connect

    client = connect(timeout_s=30)
    try:
        for ctr in client.api.containers(
            all=True, filters={"label": [f"{LABEL}=1", f"{PID_LABEL}={pid}"]}
        ):
            try:
                client.api.remove_container(ctr["Id"], force=True)
            except Exception:
                pass  # gone meanwhile
    finally:
        client.close()


# ----------------------------------------------------------------------------- docker


def docker_skip_reason() -> str | None:
    """Why the Docker tests cannot run here, or None when a daemon and the image are there."""
    from endstate_harness.sandbox.docker.container import (
        IMAGE_ENV,
        LOCAL_IMAGE,
        SandboxError,
        connect,
    )

    try:
        client = connect(timeout_s=5)
    except SandboxError as exc:
        return f"{exc} (run: sudo bash scripts/ensure-docker.sh)"
    image = os.environ.get(IMAGE_ENV) or LOCAL_IMAGE
    try:
        client.images.get(image)
    except Exception as exc:
        return f"image {image!r} is not available ({exc}); run: sudo bash scripts/ensure-docker.sh"
    finally:
        client.close()
    return None


@pytest.fixture(scope="session")
def sandbox_image() -> Iterator[str]:
    """The Docker image to use; skips with a printed reason when Docker cannot run here."""
    from endstate_harness.sandbox.docker.container import IMAGE_ENV, LOCAL_IMAGE

    reason = docker_skip_reason()
    if reason is not None:
        print(f"\nSKIPPING docker reliability tests: {reason}", file=sys.stderr)
        pytest.skip(reason)
    yield os.environ.get(IMAGE_ENV) or LOCAL_IMAGE


def private_env(base: Path, marker: str) -> dict[str, str]:
    """The environment of one CLI run: a private TMPDIR, HOME and prove cache, the marker."""
    tmp = base / "tmp"
    home = base / "home"
    tmp.mkdir(parents=True, exist_ok=True)
    home.mkdir(parents=True, exist_ok=True)
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("TMPDIR", "TEMP", "TMP", "HOME", "XDG_CACHE_HOME", "COLUMNS")
    }
    env.update(
        TMPDIR=str(tmp),
        HOME=str(home),
        ENDSTATE_AUTHOR_CACHE=str(base / "cache"),
        PYTHONPATH=os.pathsep.join(
            [str(REPO), str(REPO / "harness"), str(REPO / "lsp"), env.get("PYTHONPATH", "")]
        ).rstrip(os.pathsep),
        PYTHONDONTWRITEBYTECODE="1",
        NO_COLOR="1",
        OPENAI_API_KEY="sk-reliability-test",
    )
    env[MARK_ENV] = marker
    return env
