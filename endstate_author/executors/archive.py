"""A task's files, and every suite file its proof reads, as one content-addressed archive,
for a node that has none of them."""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import tarfile
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from endstate_author.engine.config import config_file
from endstate_author.probes.store import PROBES_DIR
from endstate_author.prove.inputs import grader_modules
from endstate_harness.task import Task

SCRATCH_PREFIX = "endstate-node-"


@dataclass(frozen=True)
class TaskArchive:
    """A packed task: ``digest`` names ``data`` (its SHA-256), ``folder`` the task's name."""

    digest: str
    folder: str
    data: bytes


NO_CONFIG = b"# no configuration above the suite: lint's defaults\n[tool.endstate-author]\n"
"""The node's suite configuration when the user's suite has none: a table of our own, so that
the node's search for one stops in its copy and never reads a pyproject.toml of the node's
machine."""


def _add(tar: tarfile.TarFile, source: Path, name: str) -> None:
    info = tar.gettarinfo(str(source), arcname=name)
    info.mtime = 0
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    if info.isreg():
        with source.open("rb") as handle:
            tar.addfile(info, handle)
    elif info.issym() or info.isdir():
        tar.addfile(info)


def _walk(root: Path) -> list[Path]:
    entries: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames.sort()
        here = Path(dirpath)
        entries.extend(here / d for d in dirnames)
        entries.extend(here / f for f in sorted(filenames))
    return entries


def pack(task: Task, suite_root: Path) -> TaskArchive:
    """Everything a proof of ``task`` reads (:func:`endstate_author.prove.inputs.read_inputs`),
    as one deterministic archive: the task folder, the suite grader modules it imports, the
    suite's saved probes (``probes/``, replayed on every task beside them) and the suite's
    configuration (as ``suite/pyproject.toml``; our own empty table when there is none)."""
    buffer = io.BytesIO()
    folder = task.root.name
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        _add_tree(tar, task.root, f"suite/{folder}")
        for label, path in grader_modules(task):
            if not label.startswith("task:"):  # a module in the task folder came with it
                _add(tar, path, f"suite/{label}")
        _add_tree(tar, task.root.parent / PROBES_DIR, f"suite/{PROBES_DIR}")
        _add_config(tar, suite_root)
    data = buffer.getvalue()
    return TaskArchive(hashlib.sha256(data).hexdigest(), folder, data)


def _add_tree(tar: tarfile.TarFile, root: Path, name: str) -> None:
    if not root.exists() and not root.is_symlink():
        return
    _add(tar, root, name)
    if root.is_dir() and not root.is_symlink():
        for path in _walk(root):
            _add(tar, path, f"{name}/{path.relative_to(root).as_posix()}")


def _add_config(tar: tarfile.TarFile, suite_root: Path) -> None:
    """The configuration file the local proof reads, byte for byte (a broken one too: the
    node then fails on it as this machine does)."""
    found = config_file(suite_root)
    data = NO_CONFIG
    if found is not None:
        try:
            data = found.read_bytes()
        except OSError:
            data = b""  # unreadable here: the node's inputs differ and the unit says so
    info = tarfile.TarInfo("suite/pyproject.toml")
    info.size = len(data)
    info.mode = 0o644
    tar.addfile(info, io.BytesIO(data))


def unpack(
    archive: TaskArchive, on_folder: Callable[[Path], None] | None = None
) -> tuple[Path, Path]:
    """Unpack into a fresh scratch folder; returns (scratch, task root). The caller removes
    the scratch folder (:func:`remove`). ``on_folder`` is told the folder as soon as it
    exists, before the (longer) unpacking, so that whoever must remove it knows it then."""
    if hashlib.sha256(archive.data).hexdigest() != archive.digest:
        raise ValueError(f"task archive {archive.digest[:12]} arrived damaged")
    scratch = Path(tempfile.mkdtemp(prefix=SCRATCH_PREFIX))
    if on_folder is not None:
        on_folder(scratch)
    try:
        with tarfile.open(fileobj=io.BytesIO(archive.data), mode="r") as tar:
            tar.extractall(scratch, filter="tar")
    except BaseException:
        remove(scratch)
        raise
    return scratch, scratch / "suite" / archive.folder


def remove(scratch: Path) -> None:
    shutil.rmtree(scratch, ignore_errors=True)
