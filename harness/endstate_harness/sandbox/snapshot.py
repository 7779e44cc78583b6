"""The sealed end state, held in memory: what every file grader reads after the agent stops."""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

import endstate_harness.fdtree as fdtree
from endstate_harness.errors import EndStateError, PathEscapeError, SandboxError
from endstate_harness.sandbox.tree import read_file_at

END_STATE_PRUNED = frozenset({".git", ".hg", ".svn"})
"""The only names an end-state walk skips: history an agent's ``git commit`` writes, which no
import can load (a dotted name is not a module name) and which would flood ``changed_paths``."""

COMPILED_SUFFIXES = (".pyc", ".pyo")

MAX_SNAPSHOT_BYTES = 512 * 1024 * 1024
"""Largest end state graded; more is the agent filling the disk, and fails the attempt."""

_MAX_LINK_HOPS = 40


@dataclass(frozen=True)
class Entry:
    """One path of a snapshot: a folder (``d``), a file (``f``) or a symlink (``l``)."""

    kind: str
    data: bytes = b""
    executable: bool = False
    target: str = ""

    def payload(self) -> bytes:
        """The content identity :func:`endstate_harness.sandbox.tree.hash_tree` uses for this
        entry."""
        if self.kind == "l":
            return b"l" + self.target.encode("utf-8", "surrogateescape")
        if self.kind == "d":
            return b"d"
        return b"f" + (b"x" if self.executable else b"-") + hashlib.sha256(self.data).digest()


@dataclass
class Snapshot:
    """A tree read into memory, by forward-slash relative path (sorted, folders included)."""

    entries: dict[str, Entry] = field(default_factory=dict)

    # --- reading --------------------------------------------------------------------------

    def resolve(self, rel: str) -> str:
        """``rel`` with links inside the snapshot followed, never leaving it (as
        :func:`endstate_harness.sandbox.tree.confine` does on disk). Returns the relative path.

        Raises:
            PathEscapeError: ``rel`` is absolute, climbs out, or a link on the way leaves.
        """
        if not isinstance(rel, str) or "\0" in rel or rel.startswith("/"):
            raise PathEscapeError(f"path must be relative to the sandbox: {rel!r}")
        pending = [p for p in rel.split("/") if p not in ("", ".")]
        pending.reverse()
        resolved: list[str] = []
        hops = 0
        while pending:
            part = pending.pop()
            if part in ("", "."):
                continue
            if part == "..":
                if not resolved:
                    raise PathEscapeError(f"path leaves the sandbox: {rel!r}")
                resolved.pop()
                continue
            entry = self.entries.get("/".join([*resolved, part]))
            if entry is not None and entry.kind == "l":
                hops += 1
                if hops > _MAX_LINK_HOPS or entry.target.startswith("/"):
                    raise PathEscapeError(f"path {rel!r} goes through a link that leaves the tree")
                pending.extend(reversed([p for p in entry.target.split("/") if p not in ("", ".")]))
                continue
            resolved.append(part)
        return "/".join(resolved)

    def read_bytes(self, rel: str) -> bytes | None:
        """The bytes of the file at ``rel`` (links followed inside), None when no file."""
        entry = self.entries.get(self.resolve(rel))
        return entry.data if entry is not None and entry.kind == "f" else None

    def exists(self, rel: str) -> bool:
        """Whether ``rel`` exists, links inside the tree followed (as ``lexists`` of
        :func:`~endstate_harness.sandbox.tree.confine` on disk)."""
        resolved = self.resolve(rel)
        return resolved == "" or resolved in self.entries

    def text_files(self) -> dict[str, str]:
        """Every regular file that decodes as UTF-8 (links and binary files left out)."""
        out: dict[str, str] = {}
        for rel, entry in self.entries.items():
            if entry.kind == "f":
                try:
                    out[rel] = entry.data.decode("utf-8")
                except UnicodeDecodeError:
                    continue
        return out

    def digests(self) -> dict[str, bytes]:
        """Per-path identity of every file and link (folders left out), for diffing."""
        return {rel: e.payload() for rel, e in self.entries.items() if e.kind != "d"}

    def tree_hash(self) -> str:
        """The same hash :func:`endstate_harness.sandbox.tree.hash_tree` gives the same tree on
        disk."""
        digest = hashlib.sha256()
        for rel in sorted(self.entries, key=_walk_order):
            payload = self.entries[rel].payload()
            name = rel.encode("utf-8", "surrogateescape")
            digest.update(len(name).to_bytes(4, "big") + name)
            digest.update(len(payload).to_bytes(4, "big") + payload)
        return digest.hexdigest()

    def top_level_names(self) -> set[str]:
        """Names at the root of the tree (files and folders)."""
        return {rel.split("/", 1)[0] for rel in self.entries}

    def leaves(self, rel: str) -> bool:
        """Whether the link at ``rel`` leads out of the tree (an absolute target, one that
        climbs above the root, or a chain of links that does), or goes round in circles."""
        try:
            self.resolve(rel)
        except PathEscapeError:
            return True
        return False

    def links_out(self) -> list[tuple[str, str]]:
        """``(path, target)`` of every link that leads out of the tree, sorted."""
        return [(rel, e.target) for rel, e in sorted(self.entries.items())
                if e.kind == "l" and self.leaves(rel)]

    # --- writing --------------------------------------------------------------------------

    def write_to(self, dst: Path, *, overlay: bool = False) -> None:
        """Materialise the snapshot under ``dst`` (created if needed).

        Every name is written relative to its folder's descriptor and made new: whatever is
        already at a path (a link the agent planted, a file, a folder) is removed first, never
        written through, so no write can land outside ``dst`` however deep the tree. With or
        without ``overlay`` (kept for the callers' sake: an overlay replaces entries, as
        :func:`endstate_harness.sandbox.tree.overlay_tree` does, and so does a fresh copy).
        """
        del overlay  # both ways replace, never write through
        dst = Path(dst)
        if dst.is_symlink():
            raise PathEscapeError(f"destination is a symlink, refusing to write through it: {dst}")
        dst.mkdir(parents=True, exist_ok=True)
        chain = fdtree.Chain(os.open(dst, fdtree.DIR_FLAGS))
        try:
            parents: list[str] = []
            for rel in sorted(self.entries, key=_walk_order):
                entry = self.entries[rel]
                *folder, name = rel.split("/")
                if folder != parents:
                    _move(chain, parents, folder)
                    parents = folder
                self._write_entry(chain.fd, rel, name, entry)
        finally:
            chain.close()

    def _write_entry(self, fd: int, rel: str, name: str, entry: Entry) -> None:
        if entry.kind == "d":
            try:
                os.mkdir(name, 0o755, dir_fd=fd)
            except FileExistsError:
                if not stat.S_ISDIR(os.lstat(name, dir_fd=fd).st_mode):
                    fdtree.remove_at(fd, name)
                    os.mkdir(name, 0o755, dir_fd=fd)
            return
        if entry.kind == "l":
            if self.leaves(rel):  # never a door out of a grading copy
                raise PathEscapeError(f"link {rel!r} -> {entry.target!r} leaves the tree")
            try:
                os.symlink(entry.target, name, dir_fd=fd)
            except FileExistsError:
                fdtree.remove_at(fd, name)
                os.symlink(entry.target, name, dir_fd=fd)
            return
        flags = fdtree.NEW_FILE_FLAGS
        mode = 0o755 if entry.executable else 0o644
        try:
            made = os.open(name, flags, 0o600, dir_fd=fd)
        except FileExistsError:
            fdtree.remove_at(fd, name)
            made = os.open(name, flags, 0o600, dir_fd=fd)
        try:
            os.fchmod(made, mode)
            view = memoryview(entry.data)
            while view:
                view = view[os.write(made, view):]
        finally:
            os.close(made)


def _move(chain: fdtree.Chain, here: list[str], there: list[str]) -> None:
    """Move ``chain`` from the folder ``here`` to the folder ``there`` (lists of names), up to
    their common part and down by name, never through a link (a link there stops the write)."""
    common = 0
    for a, b in zip(here, there, strict=False):
        if a != b:
            break
        common += 1
    while chain.depth > common:
        chain.up()
    for name in there[common:]:
        try:
            chain.down(name)
        except OSError as exc:
            raise PathEscapeError(
                f"cannot enter {'/'.join(there)!r} without following a link: {exc}"
            ) from None


def _walk_order(rel: str) -> tuple[tuple[str, ...], str]:
    """Sort key giving the order of ``tree._walk``: a folder's entries together (by name),
    folders in depth-first order, so a parent folder always comes before its contents."""
    parts = rel.split("/")
    return tuple(parts[:-1]), parts[-1]


def read_snapshot(
    root: Path, *, prune: frozenset[str] = END_STATE_PRUNED, limit: int = MAX_SNAPSHOT_BYTES,
    seal: bool = False,
) -> Snapshot:
    """Read the tree under ``root`` into memory without following any link.

    With ``seal`` (the end state's seal) the same walk first does, folder by folder, what
    :func:`take_ownership` and :func:`delete_compiled_caches` do: one walk of the tree, not
    three.

    Through directory descriptors (:mod:`endstate_harness.fdtree`): depth and path
    length do not matter, and every name is opened relative to its folder with
    ``O_NOFOLLOW``, so a file swapped for a link after it was listed is recorded as that link
    (its target text), and a folder swapped for one stops the read with a reason: nothing
    outside the tree is ever read into the snapshot.

    Raises:
        SandboxError: ``root`` is missing or not a folder.
        EndStateError: the tree holds a fifo, socket or device, or more than ``limit`` bytes,
            or changed under the read.
    """
    base = Path(root)
    if not base.is_dir() or base.is_symlink():
        raise SandboxError(f"tree does not exist or is not a folder: {base}")
    snap = Snapshot()
    total = 0
    try:
        levels = fdtree.walk(fdtree.open_root(base, grant=seal), prune, grant=seal)
        for level in levels:
            if seal:
                _clean_level(level, grant=True)
            for name, st in level.entries:
                rel = level.prefix + name
                total += _read_entry(snap, level.fd, rel, name, st, limit - total)
                if total > limit:
                    raise EndStateError(
                        f"the end state holds more than {limit // (1 << 20)} MiB of files"
                    )
    except fdtree.TreeChanged as exc:
        raise EndStateError(f"the end state changed while it was read: {exc}") from None
    except OSError as exc:
        where = exc.filename if isinstance(exc.filename, str) else "."
        raise EndStateError(
            f"cannot read {where!r} of the end state: {exc.strerror or exc}"
        ) from None
    return snap


def _read_entry(snap: Snapshot, fd: int, rel: str, name: str, st: os.stat_result,
                room: int) -> int:
    """Record one entry of the folder ``fd``; return the bytes read."""
    if stat.S_ISLNK(st.st_mode):
        snap.entries[rel] = Entry("l", target=os.readlink(name, dir_fd=fd))
        return 0
    if stat.S_ISDIR(st.st_mode):
        snap.entries[rel] = Entry("d")
        return 0
    if not stat.S_ISREG(st.st_mode):
        raise EndStateError(
            f"the end state holds {rel!r}, which is not a file, folder or symlink "
            "(a fifo, socket or device): it cannot be graded"
        )
    try:
        data = read_file_at(fd, name, max(room, 0))
    except OSError as exc:
        if exc.errno != errno.ELOOP:
            raise OSError(exc.errno, exc.strerror, rel) from None
        # Swapped for a link since it was listed: recorded as the link it is now.
        snap.entries[rel] = Entry("l", target=os.readlink(name, dir_fd=fd))
        return 0
    snap.entries[rel] = Entry("f", data, bool(st.st_mode & stat.S_IXUSR))
    return len(data)


def take_ownership(root: Path) -> None:
    """Give the owner read, write and (folders) search permission on every entry under
    ``root`` (links never followed, other bits kept), so the harness can read, snapshot and
    rewrite whatever the agent left, a folder it made read-only included. An entry the harness
    does not own stays as it is (reading it then fails the attempt with the reason).
    A descriptor walk: no recursion, no path length limit, no link followed."""
    try:
        levels = fdtree.walk(fdtree.open_root(root, grant=True), grant=True)
        for level in levels:
            for name, st in level.entries:
                if stat.S_ISREG(st.st_mode):  # folders are granted as the walk enters them
                    _grant(level.fd, name, st.st_mode, stat.S_IRUSR | stat.S_IWUSR)
    except OSError:
        return  # what cannot be granted fails the read that needs it, with the reason


def _grant(fd: int, name: str, mode: int, bits: int) -> None:
    if mode & bits == bits:
        return
    try:
        os.chmod(name, stat.S_IMODE(mode) | bits, dir_fd=fd, follow_symlinks=False)
    except (OSError, ValueError, NotImplementedError):
        pass  # a link now, or not ours: left as it is


def delete_compiled_caches(root: Path) -> list[str]:
    """Delete every ``*.pyc``/``*.pyo`` file under ``root`` (links never followed), and the
    ``__pycache__`` folders left empty. Returns the relative paths deleted.

    Why delete rather than ignore: an unchecked-hash ``.pyc`` is loaded instead of its
    byte-identical source, and a sourceless one is imported like a module; ignoring them in a
    walk would hide exactly the file that runs. A descriptor walk, so no depth stops it; a
    ``__pycache__`` folder is emptied and removed from the folder above it, before the walk
    would enter it.
    """
    deleted: list[str] = []
    for level in fdtree.walk(os.open(root, fdtree.DIR_FLAGS)):
        deleted.extend(_clean_level(level, grant=False))
    return deleted


def _clean_level(level: fdtree.Level, *, grant: bool) -> list[str]:
    """In one folder of a walk: delete its compiled files, empty its ``__pycache__`` of them
    (removed when nothing else is in it, and not entered then), with ``grant`` give the owner
    read and write on its files; the entries left are what the folder holds now."""
    deleted = _unlink_compiled(level.fd, level.prefix, level.entries)
    gone = {rel.rpartition("/")[2] for rel in deleted}
    if "__pycache__" in level.subdirs:
        try:
            inner = fdtree.open_subdir(level.fd, "__pycache__", grant=grant)
        except OSError:
            inner = None
        if inner is not None:
            try:
                found = fdtree.list_dir(inner)
                deleted.extend(_unlink_compiled(inner, f"{level.prefix}__pycache__/", found))
            finally:
                os.close(inner)
            try:
                os.rmdir("__pycache__", dir_fd=level.fd)
                level.subdirs.remove("__pycache__")
                gone.add("__pycache__")
            except OSError:
                pass  # not empty (sources in it): kept, and graded like any folder
    if gone:
        level.entries = [(n, st) for n, st in level.entries if n not in gone]
    if grant:
        for name, st in level.entries:
            if stat.S_ISREG(st.st_mode):  # folders are granted as the walk enters them
                _grant(level.fd, name, st.st_mode, stat.S_IRUSR | stat.S_IWUSR)
    return deleted


def _unlink_compiled(fd: int, prefix: str, entries: list[tuple[str, os.stat_result]]
                     ) -> list[str]:
    deleted: list[str] = []
    for name, st in entries:
        if name.endswith(COMPILED_SUFFIXES) and not stat.S_ISDIR(st.st_mode) \
                and not stat.S_ISLNK(st.st_mode):
            try:
                os.unlink(name, dir_fd=fd)
                deleted.append(prefix + name)
            except OSError:
                continue
    return deleted
