"""The sealed end state, held in memory: what every file grader reads after the agent stops."""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from endstate_harness.errors import EndStateError, PathEscapeError, SandboxError
from endstate_harness.sandbox.tree import remove_tree

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

        With ``overlay`` an entry already at a path is replaced (never written through), as
        :func:`endstate_harness.sandbox.tree.overlay_tree` does.
        """
        dst = Path(dst)
        if dst.is_symlink():
            raise PathEscapeError(f"destination is a symlink, refusing to write through it: {dst}")
        dst.mkdir(parents=True, exist_ok=True)
        for rel in sorted(self.entries, key=_walk_order):
            entry = self.entries[rel]
            target = dst / rel
            present = target.is_symlink() or target.exists()
            if entry.kind == "d":
                if present and (target.is_symlink() or not target.is_dir()):
                    _clear(target)
                target.mkdir(exist_ok=True)
                continue
            if present and overlay:
                _clear(target)
            if entry.kind == "l":
                if self.leaves(rel):  # never a door out of a grading copy
                    raise PathEscapeError(f"link {rel!r} -> {entry.target!r} leaves the tree")
                os.symlink(entry.target, target)
            else:
                target.write_bytes(entry.data)
                os.chmod(target, 0o755 if entry.executable else 0o644)


def _walk_order(rel: str) -> tuple[tuple[str, ...], str]:
    """Sort key giving the order of ``tree._walk``: a folder's entries together (by name),
    folders in depth-first order, so a parent folder always comes before its contents."""
    parts = rel.split("/")
    return tuple(parts[:-1]), parts[-1]


def _clear(target: Path) -> None:
    if target.is_symlink() or not target.is_dir():
        target.unlink(missing_ok=True)
    else:
        remove_tree(target)


def read_snapshot(
    root: Path, *, prune: frozenset[str] = END_STATE_PRUNED, limit: int = MAX_SNAPSHOT_BYTES
) -> Snapshot:
    """Read the tree under ``root`` into memory without following any link.

    Raises:
        SandboxError: ``root`` is missing or not a folder.
        EndStateError: the tree holds a fifo, socket or device, or more than ``limit`` bytes.
    """
    base = Path(root)
    if not base.is_dir() or base.is_symlink():
        raise SandboxError(f"tree does not exist or is not a folder: {base}")
    snap = Snapshot()
    total = 0
    stack: list[tuple[str, str]] = [("", os.fspath(base))]
    while stack:
        prefix, folder = stack.pop()
        try:
            with os.scandir(folder) as it:
                found = sorted((e for e in it if e.name not in prune), key=lambda e: e.name)
        except OSError as exc:
            raise EndStateError(f"cannot read folder {prefix or '.'}: {exc.strerror}") from None
        subdirs: list[tuple[str, str]] = []
        for entry in found:
            rel = f"{prefix}{entry.name}"
            try:
                st = entry.stat(follow_symlinks=False)
                if stat.S_ISLNK(st.st_mode):
                    snap.entries[rel] = Entry("l", target=os.readlink(entry.path))
                elif stat.S_ISDIR(st.st_mode):
                    snap.entries[rel] = Entry("d")
                    subdirs.append((rel + "/", entry.path))
                elif stat.S_ISREG(st.st_mode):
                    total += st.st_size
                    if total > limit:
                        raise EndStateError(
                            f"the end state holds more than {limit // (1 << 20)} MiB of files"
                        )
                    with open(entry.path, "rb") as fh:
                        data = fh.read()
                    snap.entries[rel] = Entry("f", data, bool(st.st_mode & stat.S_IXUSR))
                else:
                    raise EndStateError(
                        f"the end state holds {rel!r}, which is not a file, folder or symlink "
                        "(a fifo, socket or device): it cannot be graded"
                    )
            except OSError as exc:
                raise EndStateError(f"cannot read {rel!r} of the end state: {exc}") from None
        stack.extend(reversed(subdirs))
    return snap


def take_ownership(root: Path) -> None:
    """Give the owner read, write and (folders) search permission on every entry under
    ``root`` (links never followed, other bits kept), so the harness can read, snapshot and
    rewrite whatever the agent left, a folder it made read-only included. An entry the harness
    does not own stays as it is (reading it then fails the attempt with the reason)."""
    base = os.fspath(root)
    pending = [base]
    while pending:
        folder = pending.pop()
        _grant(folder, stat.S_IRWXU)
        try:
            with os.scandir(folder) as it:
                entries = list(it)
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    pending.append(entry.path)
                elif entry.is_file(follow_symlinks=False):
                    _grant(entry.path, stat.S_IRUSR | stat.S_IWUSR)
            except OSError:
                continue


def _grant(path: str, bits: int) -> None:
    try:
        mode = os.lstat(path).st_mode
        if mode & bits != bits:
            os.chmod(path, stat.S_IMODE(mode) | bits, follow_symlinks=False)
    except (OSError, NotImplementedError):
        pass


def delete_compiled_caches(root: Path) -> list[str]:
    """Delete every ``*.pyc``/``*.pyo`` file under ``root`` (links never followed), and the
    ``__pycache__`` folders left empty. Returns the relative paths deleted.

    Why delete rather than ignore: an unchecked-hash ``.pyc`` is loaded instead of its
    byte-identical source, and a sourceless one is imported like a module; ignoring them in a
    walk would hide exactly the file that runs.
    """
    deleted: list[str] = []
    base = os.fspath(root)
    for folder, _dirs, files in os.walk(base, topdown=False, followlinks=False):
        for name in files:
            if name.endswith(COMPILED_SUFFIXES):
                path = os.path.join(folder, name)
                if os.path.islink(path):
                    continue
                try:
                    os.unlink(path)
                    deleted.append(os.path.relpath(path, base).replace(os.sep, "/"))
                except OSError:
                    continue
        if os.path.basename(folder) == "__pycache__" and folder != base:
            try:
                os.rmdir(folder)
            except OSError:
                pass  # not empty (sources in it): kept, and graded like any folder
    return deleted
