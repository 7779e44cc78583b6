"""A task's trees as lint lists them: every entry below a folder, links never followed."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class TreeEntry:
    """One entry of a task's tree, by forward-slash path relative to that tree."""

    rel: str
    abspath: str
    is_symlink: bool
    is_dir: bool
    size: int
    special: bool = False
    """A fifo, socket or device: never opened (a fifo would block the reader)."""

    @property
    def path(self) -> Path:
        return Path(self.abspath)


def walk_tree(root: Path, *, max_entries: int = 200_000) -> dict[str, TreeEntry]:
    """Every entry below ``root`` without following symlinks; {} when ``root`` is missing."""
    out: dict[str, TreeEntry] = {}
    if root.is_symlink() or not root.is_dir():
        return out
    base = str(root)
    cut = len(base) + 1
    stack = [base]
    while stack and len(out) < max_entries:
        folder = stack.pop()
        try:
            with os.scandir(folder) as it:
                entries = list(it)
        except OSError:
            continue
        for entry in entries:
            full = entry.path
            rel = full[cut:].replace(os.sep, "/")
            try:
                is_link = entry.is_symlink()
                is_dir = entry.is_dir(follow_symlinks=False)
                special = not (is_link or is_dir or entry.is_file(follow_symlinks=False))
                size = 0 if is_dir or is_link else entry.stat(follow_symlinks=False).st_size
            except OSError:
                continue
            out[rel] = TreeEntry(rel, full, is_link, is_dir, size, special)
            if is_dir and not is_link:
                stack.append(full)
    return out
