"""Tree utilities shared by the sandboxes and by prove: copy, overlay, hash, read, confine."""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path, PurePosixPath

import endstate_harness.fdtree as fdtree
from endstate_harness.errors import PathEscapeError, SandboxError
from endstate_harness.fdtree import remove_tree as remove_tree  # a tree's removal, named here too
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


def _walk(root: Path, prune: frozenset[str]) -> Iterator[tuple[str, str, int, os.stat_result]]:
    """Yield (forward-slash relative path, name, descriptor of the folder holding it, lstat) for
    every entry, sorted, pruned, no links followed, folders before their contents: a loop over
    directory descriptors (:mod:`endstate_harness.fdtree`), so neither the tree's depth
    nor its path length matters. The descriptor is valid until the next entry is asked for."""
    for level in fdtree.walk(os.open(root, fdtree.DIR_FLAGS), prune):
        for name, st in level.entries:
            yield level.prefix + name, name, level.fd, st


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


def _copy_into(
    src: Path, dst: Path, *, prune: frozenset[str], escaping_links: bool, overlay: bool
) -> None:
    """Copy ``src`` onto ``dst`` through directory descriptors on both sides: every name of
    ``dst`` is made new (``O_EXCL``, ``mkdir``, ``symlink`` relative to its folder's
    descriptor) and whatever stood there first is removed, never written through, so a link
    planted in ``dst`` cannot send a write elsewhere, at any depth."""
    src = _require_dir(Path(src), "source tree")
    src_root = Path(os.path.realpath(src))
    dst = Path(dst)
    if dst.is_symlink():
        raise PathEscapeError(f"destination is a symlink, refusing to write through it: {dst}")
    dst.mkdir(parents=True, exist_ok=True)
    target = fdtree.Chain(os.open(dst, fdtree.DIR_FLAGS))
    try:
        for level in fdtree.walk(os.open(src_root, fdtree.DIR_FLAGS), prune):
            try:
                out = target.goto(level.depth - 1, level.name) if level.name else target.fd
            except OSError as exc:  # the folder just made became a link or vanished
                raise PathEscapeError(
                    f"cannot enter {level.prefix!r} of {dst} without following a link: {exc}"
                ) from None
            for name, st in level.entries:
                _copy_entry(src, src_root, level.prefix + name, level.fd, out, name, st,
                            escaping_links=escaping_links)
    finally:
        target.close()


def _copy_entry(
    src: Path, src_root: Path, rel: str, in_fd: int, out_fd: int, name: str, st: os.stat_result,
    *, escaping_links: bool,
) -> None:
    mode = st.st_mode
    if stat.S_ISLNK(mode):
        link = os.readlink(name, dir_fd=in_fd)
        if not escaping_links and _link_escapes(src_root, rel, link):
            raise PathEscapeError(
                f"symlink {rel!r} -> {link!r} in {src} points outside the tree; "
                "a sandbox copy would point at the host"
            )
        try:
            os.symlink(link, name, dir_fd=out_fd)
        except FileExistsError:
            fdtree.remove_at(out_fd, name)
            os.symlink(link, name, dir_fd=out_fd)
    elif stat.S_ISDIR(mode):
        try:
            os.mkdir(name, dir_fd=out_fd)  # the usual case: nothing there yet
        except FileExistsError:
            if not stat.S_ISDIR(os.lstat(name, dir_fd=out_fd).st_mode):
                fdtree.remove_at(out_fd, name)  # never descend through a link the agent left
                os.mkdir(name, dir_fd=out_fd)
    elif stat.S_ISREG(mode):
        wanted = stat.S_IMODE(mode) | stat.S_IRUSR | stat.S_IWUSR
        source = os.open(name, fdtree.FILE_FLAGS, dir_fd=in_fd)
        try:
            if not stat.S_ISREG(os.fstat(source).st_mode):
                raise SandboxError(f"{rel!r} in {src} stopped being a regular file")
            os.set_blocking(source, True)
            _write_new(out_fd, name, wanted, lambda made: _copy_bytes(source, made))
        finally:
            os.close(source)
    else:
        raise SandboxError(
            f"{rel!r} in {src} is not a file, folder or symlink (a fifo, socket or device); "
            "a task tree may hold only those three"
        )


def _write_new(out_fd: int, name: str, mode: int, fill: Callable[[int], None]) -> None:
    """Make ``name`` in the folder ``out_fd`` a new file with permission bits ``mode`` and
    let ``fill`` write it. Whatever is there first (a file, a link, soft or hard, a read-only
    file the agent left, a folder) is removed, never written through."""
    try:
        made = os.open(name, fdtree.NEW_FILE_FLAGS, 0o600, dir_fd=out_fd)
    except FileExistsError:
        fdtree.remove_at(out_fd, name)
        made = os.open(name, fdtree.NEW_FILE_FLAGS, 0o600, dir_fd=out_fd)
    try:
        os.fchmod(made, mode)
        fill(made)
    finally:
        os.close(made)


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


def _entry_payload(fd: int, name: str, st: os.stat_result) -> bytes | None:
    """What identifies an entry's content: link target, file bytes digest, or a folder mark."""
    if stat.S_ISLNK(st.st_mode):
        return b"l" + os.readlink(name, dir_fd=fd).encode("utf-8", "surrogateescape")
    if stat.S_ISDIR(st.st_mode):
        return b"d"
    if stat.S_ISREG(st.st_mode):
        executable = b"x" if st.st_mode & stat.S_IXUSR else b"-"
        return b"f" + executable + hashlib.sha256(read_file_at(fd, name)).digest()
    return None  # fifos, sockets, devices are not content


def read_file_at(fd: int, name: str, limit: int = -1) -> bytes:
    """The bytes of the regular file ``name`` in the folder ``fd`` (at most ``limit`` + 1 when
    a limit is given), opened without following a link or blocking on a fifo.

    Raises:
        OSError: ``ELOOP`` when the name is a link now; ``EINVAL`` when it is no regular file.
    """
    handle = os.open(name, fdtree.FILE_FLAGS, dir_fd=fd)
    try:
        info = os.fstat(handle)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(errno.EINVAL, "not a regular file (any more)", name)
        # Sized by fstat: one read takes the whole file, the next sees its end (a read sized
        # by the limit would allocate the limit, 512 MiB, for every file).
        cap = -1 if limit < 0 else limit + 1
        parts: list[bytes] = []
        total, step = 0, info.st_size + 1
        while cap < 0 or total < cap:
            chunk = os.read(handle, step if cap < 0 else min(step, cap - total))
            if not chunk:
                break
            parts.append(chunk)
            total += len(chunk)
            step = 1 << 20
        return parts[0] if len(parts) == 1 else b"".join(parts)
    finally:
        os.close(handle)


def hash_tree(root: Path, *, prune: frozenset[str] = PRUNED_NAMES) -> str:
    """A sha256 over the tree's content: sorted relative paths, file bytes (and the executable
    bit), folders and symlink targets. Timestamps and ownership are left out, so two runs that
    end in the same files agree however long apart they ran; links are hashed, not followed.
    """
    base = _require_dir(Path(root), "tree")
    digest = hashlib.sha256()
    for rel, name, fd, st in _walk(base, prune):
        payload = _entry_payload(fd, name, st)
        if payload is None:
            continue
        key = rel.encode("utf-8", "surrogateescape")
        # Length prefixes: no rearrangement of names and payloads yields the same stream.
        digest.update(len(key).to_bytes(4, "big") + key)
        digest.update(len(payload).to_bytes(4, "big") + payload)
    return digest.hexdigest()


def file_digests(root: Path, *, prune: frozenset[str] = PRUNED_NAMES) -> dict[str, bytes]:
    """Per-path content identity of every file and symlink (folders left out), for diffing
    two trees: binary edits and retargeted links count as changes too."""
    base = _require_dir(Path(root), "tree")
    out: dict[str, bytes] = {}
    for rel, name, fd, st in _walk(base, prune):
        if stat.S_ISDIR(st.st_mode):
            continue
        payload = _entry_payload(fd, name, st)
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
    for rel, name, fd, st in _walk(base, prune):
        if not stat.S_ISREG(st.st_mode):
            continue
        data = read_file_at(fd, name)
        try:
            out[rel] = data.decode("utf-8")
        except UnicodeDecodeError:
            continue
    return out


def changed_between(before: dict[str, bytes], after: dict[str, bytes]) -> list[str]:
    """Paths added, edited or deleted from ``before`` to ``after`` (see :func:`file_digests`)."""
    return sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p))
