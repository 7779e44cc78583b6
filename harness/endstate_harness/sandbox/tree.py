"""Tree utilities shared by the sandboxes and by prove: copy, overlay, hash, read, confine."""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import sys
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

from endstate_harness.errors import PathEscapeError, SandboxError
from endstate_harness.layout import PRUNED_NAMES

_MAX_LINK_HOPS = 40
"""As many symlinks as one path may traverse before it is called a loop (Linux's ELOOP limit)."""


# ----------------------------------------------------------------------------- confinement


def confine(root: Path | str, rel: str | os.PathLike[str]) -> Path:
    """Resolve ``rel`` under ``root`` without ever leaving it; return a link-free path.

    The path is resolved one component at a time. ``..`` may climb back up but never above
    ``root``; a symlink met on the way is resolved by reading its target text, and a target
    that is absolute or that climbs out of ``root`` raises :class:`PathEscapeError`, so the
    link is never followed out. Components that do not exist yet are kept as they are, so
    the result can name a file about to be written. The result contains no symlink (at the
    moment of the call), so opening it cannot be redirected elsewhere.

    Raises:
        PathEscapeError: ``rel`` is absolute, contains a NUL byte, climbs out of ``root``, or
            reaches a symlink leading outside it (or a chain of more than 40 links).
    """
    base = Path(os.path.realpath(root))
    text = os.fspath(rel)
    if not isinstance(text, str):
        raise PathEscapeError(f"path must be text, not {type(text).__name__}: {text!r}")
    if "\0" in text:
        raise PathEscapeError(f"path contains a NUL byte: {text!r}")
    if text.startswith("/"):
        raise PathEscapeError(f"path must be relative to the sandbox, not absolute: {text!r}")
    pending = [part for part in text.split("/") if part not in ("", ".")]
    pending.reverse()  # a stack: the next component is at the end
    resolved: list[str] = []
    hops = 0
    while pending:
        part = pending.pop()
        if part in ("", "."):
            continue
        if part == "..":
            if not resolved:
                raise PathEscapeError(f"path leaves the sandbox: {text!r}")
            resolved.pop()
            continue
        candidate = base.joinpath(*resolved, part)
        if candidate.is_symlink():
            hops += 1
            if hops > _MAX_LINK_HOPS:
                raise PathEscapeError(f"too many levels of symbolic links in {text!r}")
            target = os.readlink(candidate)
            if target.startswith("/"):
                raise PathEscapeError(
                    f"path {text!r} goes through symlink {'/'.join([*resolved, part])!r} "
                    f"with absolute target {target!r}, which leaves the sandbox"
                )
            more = [p for p in target.split("/") if p not in ("", ".")]
            # The link's target is relative to the folder holding the link: replace the link
            # by its target's components and carry on resolving from there.
            pending.extend(reversed(more))
            continue
        resolved.append(part)
    return base.joinpath(*resolved)


# ----------------------------------------------------------------------------- walking


def _walk(root: Path, prune: frozenset[str]) -> Iterator[tuple[str, os.DirEntry[str]]]:
    """Yield (forward-slash relative path, entry) for every entry, sorted, pruned, no links
    followed. Directories are yielded before their contents."""
    stack: list[tuple[str, Path]] = [("", root)]
    while stack:
        prefix, folder = stack.pop()
        with os.scandir(folder) as it:
            entries = sorted((e for e in it if e.name not in prune), key=lambda e: e.name)
        subdirs: list[tuple[str, Path]] = []
        for entry in entries:
            rel = f"{prefix}{entry.name}"
            yield rel, entry
            if entry.is_dir(follow_symlinks=False):
                subdirs.append((rel + "/", Path(entry.path)))
        stack.extend(reversed(subdirs))


def _link_escapes(src_root: Path, rel: str, target: str) -> bool:
    """Whether a link at ``rel`` (relative to ``src_root``) with ``target`` leaves the tree,
    judged both lexically and physically (through links already in the tree)."""
    if target.startswith("/"):
        return True
    parent = PurePosixPath(rel).parent
    depth = 0
    for part in [*parent.parts, *target.split("/")]:
        if part in ("", "."):
            continue
        depth = depth - 1 if part == ".." else depth + 1
        if depth < 0:
            return True
    try:
        confine(src_root, rel)
    except PathEscapeError:
        return True
    return False


def _require_dir(path: Path, what: str) -> Path:
    if not path.exists():
        raise SandboxError(f"{what} does not exist: {path}")
    if not path.is_dir():
        raise SandboxError(f"{what} is not a directory: {path}")
    return path


def _clear(target: Path) -> None:
    """Remove whatever is at ``target`` (link, file or folder) without following links."""
    if target.is_symlink() or not target.is_dir():
        target.unlink(missing_ok=True)
    else:
        remove_tree(target)


def _copy_into(
    src: Path, dst: Path, *, prune: frozenset[str], escaping_links: bool, overlay: bool
) -> None:
    src = _require_dir(Path(src), "source tree")
    src_root = Path(os.path.realpath(src))
    dst = Path(dst)
    if dst.is_symlink():
        raise PathEscapeError(f"destination is a symlink, refusing to write through it: {dst}")
    dst.mkdir(parents=True, exist_ok=True)
    for rel, entry in _walk(src_root, prune):
        target = dst / rel
        mode = entry.stat(follow_symlinks=False).st_mode
        if stat.S_ISLNK(mode):
            link = os.readlink(entry.path)
            if not escaping_links and _link_escapes(src_root, rel, link):
                raise PathEscapeError(
                    f"symlink {rel!r} -> {link!r} in {src} points outside the tree; "
                    "a sandbox copy would point at the host"
                )
            if overlay and (target.exists() or target.is_symlink()):
                _clear(target)
            os.symlink(link, target)
        elif stat.S_ISDIR(mode):
            try:
                os.mkdir(target)  # the usual case: nothing there yet
                continue
            except FileExistsError:
                pass
            if target.is_symlink() or (target.exists() and not target.is_dir()):
                _clear(target)  # never descend through a link the agent left
            target.mkdir(exist_ok=True)
        elif stat.S_ISREG(mode):
            wanted = stat.S_IMODE(mode) | stat.S_IRUSR | stat.S_IWUSR
            if _copy_new_file(entry.path, str(target), wanted):
                continue
            # something is there: replace rather than write into it (no writing through a
            # link, soft or hard, and a read-only file the agent left does not stop it)
            _clear(target)
            shutil.copyfile(entry.path, target, follow_symlinks=False)
            os.chmod(target, wanted)
        else:
            raise SandboxError(
                f"{rel!r} in {src} is not a file, folder or symlink (a fifo, socket or device); "
                "a task tree may hold only those three"
            )


def _copy_new_file(src: str, dst: str, mode: int) -> bool:
    """Copy the regular file ``src`` to ``dst`` with permission bits ``mode``, if nothing is
    at ``dst`` (not even a dangling link: ``O_EXCL`` never follows one); False, having
    written nothing, when something is. The common case of every sandbox copy, in a handful
    of system calls (``shutil.copyfile`` spends a dozen on checks that cannot fail here)."""
    source = os.open(src, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        try:
            made = os.open(
                dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600
            )
        except FileExistsError:
            return False
        try:
            os.fchmod(made, mode)
            _copy_bytes(source, made)
        finally:
            os.close(made)
    finally:
        os.close(source)
    return True


def _copy_bytes(source: int, made: int) -> None:
    """Everything ``source`` holds, to its end (as ``shutil.copyfile``): ``sendfile`` in the
    kernel, or reads and writes where the file system does not offer it."""
    offset = 0
    try:
        while sent := os.sendfile(made, source, offset, 1 << 30):
            offset += sent
        return
    except OSError:
        if offset:
            raise
    while chunk := os.read(source, 1 << 20):
        view = memoryview(chunk)
        while view:
            view = view[os.write(made, view) :]


def copy_tree(src: Path, dst: Path, *, prune: frozenset[str] = PRUNED_NAMES) -> None:
    """Copy the tree ``src`` to ``dst`` (created if needed), pruning ``prune`` at every level.

    Files keep their permission bits, so an executable script stays executable; symlinks
    are copied as links.

    Raises:
        SandboxError: ``src`` is not a folder, or holds a fifo, socket or device.
        PathEscapeError: a symlink in ``src`` points outside ``src``.
    """
    _copy_into(src, dst, prune=prune, escaping_links=False, overlay=False)


def overlay_tree(src: Path, dst: Path, *, prune: frozenset[str] = PRUNED_NAMES) -> None:
    """Overlay ``src`` onto the existing tree ``dst``: add and overwrite, never delete.

    Used for holdout/, solution/ and defects/. Same rules as :func:`copy_tree`, and a link
    already in ``dst`` where ``src`` writes is replaced, never written through.
    """
    _copy_into(src, dst, prune=prune, escaping_links=False, overlay=True)


def snapshot_tree(src: Path, dst: Path, *, prune: frozenset[str] = PRUNED_NAMES) -> None:
    """Copy an *end state* exactly, escaping links included (as links, never followed).

    Unlike :func:`copy_tree` this accepts links pointing outside: the end state is what the
    agent left, a grader must be able to see such a link in it, and the reading API refuses
    to follow it anyway.
    """
    _copy_into(src, dst, prune=prune, escaping_links=True, overlay=False)


def remove_tree(path: Path, *, _top: str | None = None) -> None:
    """Delete a tree, also when the agent left read-only folders in it.

    Never follows links: a link is removed, not its target. Permissions are only ever added,
    and only inside the tree: the folder holding it (``/tmp``, ``/dev/shm``) is never touched,
    even when removing the tree's root itself fails.
    """
    path = Path(path)
    if path.is_symlink() or not path.exists():
        path.unlink(missing_ok=True)
        return
    if not path.is_dir():  # a file (or a fifo): rmtree does not take one
        path.unlink()
        return
    top = _top if _top is not None else os.path.abspath(path)

    def _retry(_func: object, name: str, _exc: object) -> None:
        # A folder without the write bit cannot lose entries: grant it and try again.
        parent = os.path.dirname(name)
        if parent != top and not parent.startswith(top + os.sep):
            return  # the root itself could not go (busy, refilled): never widen its parent
        try:
            os.chmod(parent, stat.S_IMODE(os.lstat(parent).st_mode) | stat.S_IRWXU)
            if os.path.isdir(name) and not os.path.islink(name):
                os.chmod(name, stat.S_IMODE(os.lstat(name).st_mode) | stat.S_IRWXU)
                remove_tree(Path(name), _top=top)
            else:
                os.unlink(name)
        except OSError:
            pass

    if sys.version_info >= (3, 12):
        shutil.rmtree(path, onexc=_retry)
    else:
        shutil.rmtree(path, onerror=_retry)


# ----------------------------------------------------------------------------- reading


def _entry_payload(entry: os.DirEntry[str]) -> bytes | None:
    """What identifies an entry's content: link target, file bytes digest, or a folder mark."""
    st = entry.stat(follow_symlinks=False)
    if stat.S_ISLNK(st.st_mode):
        return b"l" + os.readlink(entry.path).encode("utf-8", "surrogateescape")
    if stat.S_ISDIR(st.st_mode):
        return b"d"
    if stat.S_ISREG(st.st_mode):
        executable = b"x" if st.st_mode & stat.S_IXUSR else b"-"
        with open(entry.path, "rb") as fh:
            return b"f" + executable + hashlib.file_digest(fh, "sha256").digest()
    return None  # fifos, sockets, devices are not content


def hash_tree(root: Path, *, prune: frozenset[str] = PRUNED_NAMES) -> str:
    """A sha256 over the tree's content: sorted relative paths, file bytes (and the executable
    bit), folders and symlink targets. Timestamps and ownership are left out, so two runs that
    end in the same files agree however long apart they ran; links are hashed, not followed.
    """
    base = _require_dir(Path(root), "tree")
    digest = hashlib.sha256()
    for rel, entry in _walk(base, prune):
        payload = _entry_payload(entry)
        if payload is None:
            continue
        name = rel.encode("utf-8", "surrogateescape")
        # Length prefixes: no rearrangement of names and payloads yields the same stream.
        digest.update(len(name).to_bytes(4, "big") + name)
        digest.update(len(payload).to_bytes(4, "big") + payload)
    return digest.hexdigest()


def file_digests(root: Path, *, prune: frozenset[str] = PRUNED_NAMES) -> dict[str, bytes]:
    """Per-path content identity of every file and symlink (folders left out), for diffing
    two trees: binary edits and retargeted links count as changes too."""
    base = _require_dir(Path(root), "tree")
    out: dict[str, bytes] = {}
    for rel, entry in _walk(base, prune):
        if entry.is_dir(follow_symlinks=False):
            continue
        payload = _entry_payload(entry)
        if payload is not None:
            out[rel] = payload
    return out


def text_files(root: Path, *, prune: frozenset[str] = PRUNED_NAMES) -> dict[str, str]:
    """Every regular file under ``root`` that decodes as UTF-8, by forward-slash relative path.

    Symlinks are not read (their target may be outside), and binary files are left out
    rather than mangled, so a grader pattern never matches replacement characters.
    """
    base = _require_dir(Path(root), "tree")
    out: dict[str, str] = {}
    for rel, entry in _walk(base, prune):
        if not entry.is_file(follow_symlinks=False):
            continue
        with open(entry.path, "rb") as fh:
            data = fh.read()
        try:
            out[rel] = data.decode("utf-8")
        except UnicodeDecodeError:
            continue
    return out


def changed_between(before: dict[str, bytes], after: dict[str, bytes]) -> list[str]:
    """Paths added, edited or deleted from ``before`` to ``after`` (see :func:`file_digests`)."""
    return sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p))
