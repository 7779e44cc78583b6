"""A task's files as one content-addressed archive, for a node that has none of them."""

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

from endstate_author.catalogue import Catalogue
from endstate_author.config import Config
from endstate_harness.graders import grader_search_paths
from endstate_harness.task import Task

SCRATCH_PREFIX = "endstate-node-"


@dataclass(frozen=True)
class TaskArchive:
    """A packed task: ``digest`` names ``data`` (its SHA-256), ``folder`` the task's name."""

    digest: str
    folder: str
    data: bytes


def _grader_files(task: Task, suite_root: Path) -> list[tuple[Path, str]]:
    """(file, path inside the archive's suite folder) of every suite grader module the task
    names that lives outside the task folder (those inside travel with the folder)."""
    try:
        catalogue = Catalogue.for_task(task.root, suite_root, Config())
    except Exception:  # an unreadable config: the graders resolve on the node or fail there
        return []
    roots = [p for p in grader_search_paths(task.root, suite_root=suite_root)]
    task_root = task.root.resolve()
    found: dict[str, Path] = {}
    for spec in task.graders:
        try:
            info = catalogue.resolve(spec.name)
        except Exception:
            info = None
        if info is None or info.builtin or info.file is None:
            continue
        module = Path(info.file).resolve()
        if module.is_relative_to(task_root):
            continue
        base = next((r for r in roots if module.is_relative_to(r)), None)
        if base is None:
            continue
        rel = module.relative_to(base)
        found[rel.as_posix()] = module
        for parent in rel.parents:  # the packages it sits in need their __init__.py
            init = base / parent / "__init__.py"
            if parent != Path(".") and init.is_file():
                found[(parent / "__init__.py").as_posix()] = init
    return sorted(((path, rel) for rel, path in found.items()), key=lambda item: item[1])


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
    """The task folder and the grader modules it needs, as one deterministic archive."""
    buffer = io.BytesIO()
    folder = task.root.name
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        _add(tar, task.root, f"suite/{folder}")
        for path in _walk(task.root):
            _add(tar, path, f"suite/{folder}/{path.relative_to(task.root).as_posix()}")
        for path, rel in _grader_files(task, suite_root):
            _add(tar, path, f"suite/{rel}")
    data = buffer.getvalue()
    return TaskArchive(hashlib.sha256(data).hexdigest(), folder, data)


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
