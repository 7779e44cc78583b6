"""A task folder's content as one digest: what the prove cache keys on, and what an eval run
records per task so that ``eval compare`` can tell when a task changed between two runs."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from pathlib import Path

TASK_PARTS = ("task.json", "prompt.md", "oracle.json", "fixture", "holdout", "solution", "defects")
"""Every part of a task folder that changes what the task asks or how it is graded."""


ANY_NAME = "surrogateescape"
"""How a name that is not UTF-8 enters a digest: as the bytes it is."""


def feed_tree(digest: hashlib._Hash, root: Path, label: str) -> None:
    """Feed a file, a symlink or a whole folder (names, sizes, bytes, in a stable order): any
    name, not UTF-8 included, and any entry (a fifo is named, never opened)."""
    if root.is_symlink():
        digest.update(f"L {label} {os.readlink(root)}\n".encode(errors=ANY_NAME))
        return
    if root.is_file():
        digest.update(f"F {label}\n".encode())
        digest.update(root.read_bytes())
        return
    if not root.is_dir():
        return
    for dirpath, dirnames, filenames in _walk(str(root)):
        for name in sorted(
            filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]
        ):
            path = Path(dirpath) / name
            rel = path.relative_to(root).as_posix()
            if path.is_symlink():
                digest.update(f"L {label}/{rel} {os.readlink(path)}\n".encode(errors=ANY_NAME))
            elif path.is_file():
                digest.update(f"F {label}/{rel} {path.stat().st_size}\n".encode(errors=ANY_NAME))
                digest.update(path.read_bytes())
            else:
                digest.update(f"S {label}/{rel}\n".encode(errors=ANY_NAME))


def _walk(top: str) -> Iterator[tuple[str, list[str], list[str]]]:
    """``os.walk(top)`` top down with each folder's subfolders in sorted order, links not
    followed, as the digest always read it, but without recursion: ``os.walk`` recurses once
    per level and a task 1,000 folders deep raised RecursionError in ``eval`` (ES414 names
    such a tree; the digest must not crash on it first)."""
    stack = [top]
    while stack:
        folder = stack.pop()
        try:
            with os.scandir(folder) as listing:
                entries = list(listing)
        except OSError:
            continue
        dirnames: list[str] = []
        filenames: list[str] = []
        for entry in entries:
            try:
                is_dir = entry.is_dir()
            except OSError:
                is_dir = False
            (dirnames if is_dir else filenames).append(entry.name)
        dirnames.sort()
        yield folder, dirnames, filenames
        inside = [d for d in dirnames if not os.path.islink(os.path.join(folder, d))]
        stack.extend(os.path.join(folder, d) for d in reversed(inside))


def content_hash(root: Path) -> str:
    """``sha256:<hex>`` of the task folder's parts (:data:`TASK_PARTS`)."""
    digest = hashlib.sha256()
    for part in TASK_PARTS:
        feed_tree(digest, root / part, part)
    return "sha256:" + digest.hexdigest()
