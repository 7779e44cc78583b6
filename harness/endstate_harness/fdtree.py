"""Walking and removing trees through directory descriptors: no recursion, no link followed.

Why descriptors and not paths: a tree the code under test made can be deeper than Python's
recursion limit (``os.walk``, ``shutil.rmtree`` and ``Path.rglob`` recurse on Python 3.11) and
longer than ``PATH_MAX`` (a path of 5,000 bytes cannot be opened at all), and a name checked
with ``lstat`` and then opened by path can be swapped for a link in between. Here every step is
``openat`` of one name relative to the folder above it, with ``O_NOFOLLOW``: depth and path
length do not matter, and a name that became a link is refused (``ELOOP``), never followed.
Every walk is a loop over an explicit stack.

A :class:`Chain` holds the descriptors of the folder being visited and its ancestors, but at
most :data:`OPEN_DESCRIPTORS` of them: a deeper ancestor is reopened through ``..`` when the
walk climbs back to it, and checked to be the very folder it left (device and inode), so a
folder moved meanwhile stops the walk with :class:`TreeChanged` instead of sending it
elsewhere.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from endstate_harness.errors import SandboxError

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
"""How a folder is opened: only a real folder, never through a link."""
FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
"""How a file is opened for reading: never through a link, and a fifo swapped in for the file
does not block the open (its ``fstat`` then shows it is no regular file)."""
NEW_FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
"""How a file is written: made new (``O_EXCL`` never follows a dangling link either)."""
OPEN_DESCRIPTORS = 16
"""Folder descriptors one chain keeps open (a copy holds two chains; ``--jobs`` runs several at
once, under a 1,024 descriptor limit too); a walk over a deeper tree reopens through ``..``."""


class TreeChanged(OSError):
    """A folder was moved or replaced while a walk was inside it (the walk stops rather than
    continue somewhere else)."""


def open_root(path: str | os.PathLike[str], *, grant: bool = False) -> int:
    """A descriptor of the folder ``path``; its last component must not be a link (the
    components above it are the caller's own folders). With ``grant``, a folder its owner
    made unreadable gets ``u+rwx`` first."""
    try:
        fd = os.open(path, DIR_FLAGS)
    except PermissionError:
        if not grant:
            raise
        mode = os.lstat(path).st_mode
        os.chmod(path, stat.S_IMODE(mode) | stat.S_IRWXU, follow_symlinks=False)
        fd = os.open(path, DIR_FLAGS)
    if grant:
        _grant_fd(fd)
    return fd


def open_subdir(parent: int, name: str, *, grant: bool = False) -> int:
    """A descriptor of the folder ``name`` in ``parent``, never through a link (``ELOOP`` or
    ``ENOTDIR`` when it is one). With ``grant`` its owner gets ``u+rwx`` on it first."""
    try:
        fd = os.open(name, DIR_FLAGS, dir_fd=parent)
    except PermissionError:
        if not grant:
            raise
        # No read permission: add it on the name, without following a link (chmod at a link
        # raises rather than touching the link's target).
        mode = os.lstat(name, dir_fd=parent).st_mode
        if not stat.S_ISDIR(mode):
            raise
        try:
            os.chmod(name, stat.S_IMODE(mode) | stat.S_IRWXU, dir_fd=parent,
                     follow_symlinks=False)
        except (ValueError, NotImplementedError) as exc:
            raise PermissionError(f"cannot grant access to {name!r}: {exc}") from None
        fd = os.open(name, DIR_FLAGS, dir_fd=parent)
    if grant:
        _grant_fd(fd)
    return fd


def _grant_fd(fd: int) -> None:
    mode = os.fstat(fd).st_mode
    if mode & stat.S_IRWXU != stat.S_IRWXU:
        try:
            os.fchmod(fd, stat.S_IMODE(mode) | stat.S_IRWXU)
        except OSError:
            pass  # not ours: reading it then fails with the reason


def _ident(fd: int) -> tuple[int, int]:
    st = os.fstat(fd)
    return st.st_dev, st.st_ino


class Chain:
    """The open folder of a walk and the ancestors above it, down from a root descriptor (which
    the chain owns and closes). Moves only by one name down or one level up."""

    def __init__(self, root_fd: int, *, grant: bool = False) -> None:
        self.grant = grant
        self.names: list[str] = []
        self._fds: list[int | None] = [root_fd]
        self._idents: list[tuple[int, int]] = [_ident(root_fd)]
        self._open = 1

    @property
    def depth(self) -> int:
        return len(self.names)

    @property
    def fd(self) -> int:
        """The descriptor of the folder the chain is in."""
        fd = self._fds[-1]
        assert fd is not None
        return fd

    def down(self, name: str) -> int:
        """Enter the folder ``name`` of the current one (never through a link)."""
        fd = open_subdir(self.fd, name, grant=self.grant)
        self.names.append(name)
        self._fds.append(fd)
        self._idents.append(_ident(fd))
        self._open += 1
        if self._open > OPEN_DESCRIPTORS:
            # Close the oldest open one below the root (the root is never reopened by "..").
            index = len(self._fds) - OPEN_DESCRIPTORS
            old = self._fds[index]
            if index > 0 and old is not None:
                os.close(old)
                self._fds[index] = None
                self._open -= 1
        return fd

    def up(self) -> int:
        """Climb back to the parent folder; it must still be the folder the walk came from."""
        if not self.names:
            raise ValueError("the chain is at its root")
        fd = self._fds.pop()
        self._idents.pop()
        self.names.pop()
        assert fd is not None
        try:
            if self._fds[-1] is None:
                parent = os.open("..", DIR_FLAGS, dir_fd=fd)
                if _ident(parent) != self._idents[-1]:
                    os.close(parent)
                    raise TreeChanged(f"a folder moved during the walk, at depth {self.depth}")
                self._fds[-1] = parent
                self._open += 1
        finally:
            os.close(fd)
            self._open -= 1
        return self.fd

    def goto(self, depth: int, name: str | None) -> int:
        """Climb to ``depth``, then enter ``name`` (None: stay): how a second chain follows
        the folders a :func:`walk` yields, in the same order."""
        while self.depth > depth:
            self.up()
        return self.down(name) if name is not None else self.fd

    def close(self) -> None:
        for fd in self._fds:
            if fd is not None:
                os.close(fd)
        self._fds = []
        self._open = 0


@dataclass
class Level:
    """One folder of a :func:`walk`: its entries (name, ``lstat``), sorted, pruned names left
    out; ``subdirs`` are the folders among them, which a consumer may shorten to skip some."""

    depth: int
    name: str | None
    prefix: str
    fd: int
    entries: list[tuple[str, os.stat_result]]
    subdirs: list[str] = field(default_factory=list)


def list_dir(fd: int, prune: frozenset[str] = frozenset()) -> list[tuple[str, os.stat_result]]:
    """The entries of the open folder ``fd`` with their ``lstat``, sorted by name."""
    with os.scandir(fd) as it:
        found = [(e.name, e.stat(follow_symlinks=False)) for e in it if e.name not in prune]
    found.sort(key=lambda item: item[0])
    return found


def walk(root_fd: int, prune: frozenset[str] = frozenset(), *, grant: bool = False,
         ) -> Iterator[Level]:
    """Every folder under ``root_fd`` (which the walk owns and closes), folder before contents,
    a folder's entries together, folders in depth-first name order (the order
    :func:`endstate_harness.sandbox.tree.hash_tree` hashes in). Links are listed, never entered.
    With ``grant`` every folder gets ``u+rwx`` as it is entered."""
    chain = Chain(root_fd, grant=grant)
    try:
        pending: list[tuple[int, str | None]] = [(0, None)]
        while pending:
            depth, name = pending.pop()
            fd = chain.goto(depth, name)
            prefix = "".join(f"{n}/" for n in chain.names) if name is not None else ""
            entries = list_dir(fd, prune)
            level = Level(chain.depth, name, prefix, fd, entries,
                          [n for n, st in entries if stat.S_ISDIR(st.st_mode)])
            yield level
            pending.extend((level.depth, n) for n in reversed(level.subdirs))
    finally:
        chain.close()


# ----------------------------------------------------------------------------- removing


def remove_at(parent: int, name: str) -> None:
    """Remove ``name`` from the folder ``parent``, whatever it is; a folder with everything in
    it, folders its owner made read-only included. Never follows a link (a link is removed,
    not its target), never leaves the tree, never recurses. Missing: nothing to do."""
    try:
        os.unlink(name, dir_fd=parent)
        return
    except FileNotFoundError:
        return
    except IsADirectoryError:
        pass
    except PermissionError:
        if not stat.S_ISDIR(os.lstat(name, dir_fd=parent).st_mode):
            raise
    fd = open_subdir(parent, name, grant=True)
    empty_dir(fd)
    os.rmdir(name, dir_fd=parent)


def empty_dir(fd: int) -> None:
    """Remove what can be removed in the open folder ``fd`` (which this closes): an explicit
    stack of folders, each emptied of its files and links, then removed from the one above.
    Best effort, as ``rm -rf``: what cannot go (another user's file) stays, and the caller's
    ``rmdir`` of the folder then says so."""
    chain = Chain(fd, grant=True)
    try:
        _grant_fd(fd)
        stack: list[list[str]] = [_unlink_files(chain.fd)]
        while stack:
            subdirs = stack[-1]
            if subdirs:
                try:
                    chain.down(subdirs.pop())
                except OSError:
                    continue  # gone, or not ours: left for the rmdir above it to report
                stack.append(_unlink_files(chain.fd))
                continue
            stack.pop()
            if not stack:
                break
            name = chain.names[-1]
            chain.up()
            try:
                os.rmdir(name, dir_fd=chain.fd)
            except OSError:
                continue
    finally:
        chain.close()


def _unlink_files(fd: int) -> list[str]:
    """Unlink every non-folder in the open folder ``fd``; return its folders' names."""
    folders: list[str] = []
    try:
        with os.scandir(fd) as it:
            names = [(e.name, e.is_dir(follow_symlinks=False)) for e in it]
    except OSError:
        return folders
    for name, is_dir in names:
        if is_dir:
            folders.append(name)
            continue
        try:
            os.unlink(name, dir_fd=fd)
        except IsADirectoryError:  # became a folder since the listing
            folders.append(name)
        except OSError:
            continue
    return folders


def remove_tree(path: Path) -> None:
    """Delete a tree, also when the agent left read-only folders in it, whatever its depth.

    Never follows links: a link is removed, not its target. Permissions are only ever added,
    and only inside the tree: the folder holding it (``/tmp``, ``/dev/shm``) is never touched.
    A loop over directory descriptors (:func:`remove_at`), not
    ``shutil.rmtree``: that recurses once per level (RecursionError past ~1,000 on Python 3.11)
    and opens paths longer than ``PATH_MAX``. Best effort, as ``rm -rf``: what cannot be
    removed (another user's file) stays, and the call still returns.
    """
    text = os.path.abspath(path)
    parent, name = os.path.split(text)
    if not name:
        raise SandboxError(f"refusing to remove the root folder: {text}")
    try:
        holder = os.open(parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except FileNotFoundError:
        return
    try:
        remove_at(holder, name)
    except FileNotFoundError:
        pass
    except OSError:
        pass  # what could not go stays (as shutil.rmtree's onexc left it)
    finally:
        os.close(holder)


# ----------------------------------------------------------------------------- reading
