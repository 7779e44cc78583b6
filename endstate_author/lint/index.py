"""A suite's stat index for lint's cache: an unchanged task is known without reading it."""

from __future__ import annotations

import marshal
import os
import stat
import sys
import time
from array import array
from pathlib import Path
from typing import Any

from endstate_harness import layout

try:  # hashlib's own blake2b: importing hashlib loads OpenSSL too (~5 ms of a cached lint)
    from _blake2 import blake2b
except ImportError:  # a Python built without it
    from hashlib import blake2b

PARALLEL_MIN = 64
"""A suite with at least this many recorded tasks is checked by two processes (a fork)."""

RACY_NS = 2_000_000_000
"""Entries changed within this much of the index's writing are hashed again (2 s covers the
coarsest common time resolution, FAT's)."""

_MAGIC = b"ESLX\x03" + bytes([marshal.version]) + sys.hexversion.to_bytes(4, "big")
_SUM = 16  # bytes of the body's blake2b checksum after the magic

_FILE, _DIR = stat.S_IFREG, stat.S_IFDIR
_KIND = 0o170000  # the bits of a mode that say its kind (the mask of stat.S_IFMT)


def _pack(values: list[int]) -> bytes | None:
    """Signed 64-bit values as bytes; None when one does not fit (never matches then)."""
    try:
        return array("q", values).tobytes()
    except OverflowError:
        return None


def _load(path: Path) -> Any:
    """The object stored at ``path``; None when missing, unreadable, corrupt or foreign."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError:
        return None
    head = len(_MAGIC)
    if data[:head] != _MAGIC:
        return None
    body = data[head + _SUM :]
    if blake2b(body, digest_size=_SUM).digest() != data[head : head + _SUM]:
        return None
    try:
        return marshal.loads(body)
    except (EOFError, ValueError, TypeError):
        return None


def _save(path: Path, value: Any) -> bool:
    """Write ``value`` to ``path`` atomically; False when it cannot be written."""
    tmp = None
    try:
        body = marshal.dumps(value)
        # tempfile costs a few ms to import, which a lint answered from the index (that
        # writes nothing) must not pay: deferred
        import tempfile

        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=path.parent)
        with os.fdopen(fd, "wb") as handle:
            handle.write(_MAGIC + blake2b(body, digest_size=_SUM).digest() + body)
        os.replace(tmp, path)
        tmp = None
        return True
    except (OSError, ValueError):
        return False
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass


def _index_path(folder: Path, kind: str, head: str) -> Path:
    name = blake2b(head.encode("utf-8", "surrogatepass"), digest_size=20).hexdigest()
    return folder / f"{name}.{kind}"


def _unchanged(root: str, names: str, packed: bytes, *, follow: bool = False) -> bool:
    """Whether every entry (``names``, "\\0"-separated, relative to ``root``; "" is ``root``)
    still has the status packed in ``packed`` (through symbolic links when ``follow``)."""
    prefix = root.rstrip(os.sep) + os.sep
    lstat = os.stat if follow else os.lstat
    now: list[int] = []
    add = now.extend
    try:
        for rel in names.split("\0"):
            info = lstat(prefix + rel if rel else root)
            add((info.st_mode & _KIND, info.st_size, info.st_mtime_ns, info.st_ctime_ns,
                 info.st_ino, info.st_dev))  # fmt: skip
    except (OSError, ValueError):
        return False
    return _pack(now) == packed


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


class SuiteIndex:
    """The index of one suite folder under one tool version and configuration.

    ``tasks`` maps a task (as given) to [key, names, packed statuses, findings]: findings
    are kept as the cache's JSON text and decoded only for a task that is asked for."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.tasks: dict[str, list[Any]] = {}
        self.suite: dict[str, Any] = {}
        self.dirty = False
        self.verdicts: dict[str, bool] = {}  # checked ahead by verify_many
        data = _load(path)
        if isinstance(data, tuple) and len(data) == 2:
            tasks, suite = data
            if isinstance(tasks, dict) and isinstance(suite, dict):
                self.tasks, self.suite = tasks, suite

    @classmethod
    def for_suite(cls, folder: Path, head: str) -> SuiteIndex:
        return cls(_index_path(folder, "idx", head))

    def known(self, task: str, root: str) -> tuple[str, str] | None:
        """(key, findings as JSON text) of ``task`` when its folder is unchanged."""
        verdict = self.verdicts.pop(task, None)
        if verdict is None:
            verdict = self._check(task, root)
        if not verdict:
            return None
        key, _names, _packed, findings = self.tasks[task]
        return (key, findings) if isinstance(key, str) and isinstance(findings, str) else None

    def _check(self, task: str, root: str) -> bool:
        record = self.tasks.get(task)
        try:
            _key, names, packed, _findings = record  # type: ignore[misc]
            return _unchanged(root, names, packed)
        except (TypeError, ValueError, AttributeError):
            return False

    def verify_many(self, items: list[tuple[str, str]]) -> None:
        """Check many tasks ((task, root) pairs) ahead of :meth:`known`, the first half in a
        forked child while this process checks the second: the statuses are system calls,
        and on two cores half the time. Anything that goes wrong leaves them to ``known``."""
        items = [item for item in items if item[0] in self.tasks]
        if len(items) < PARALLEL_MIN or not hasattr(os, "fork") or _cores() < 2:
            return
        half, rest = items[: len(items) // 2], items[len(items) // 2 :]
        read_end, write_end = os.pipe()
        try:
            pid = os.fork()
        except OSError:
            os.close(read_end)
            os.close(write_end)
            return
        if pid == 0:  # the child: answers one byte per task, then leaves without cleanup
            status = 1
            try:
                os.close(read_end)
                answer = bytes(self._check(task, root) for task, root in half)
                view = memoryview(answer)
                while view:
                    view = view[os.write(write_end, view) :]
                status = 0
            finally:
                os._exit(status)
        os.close(write_end)
        chunks: list[bytes] = []
        try:
            for task, root in rest:
                self.verdicts[task] = self._check(task, root)
            while chunk := os.read(read_end, 1 << 16):
                chunks.append(chunk)
        finally:
            os.close(read_end)
            _, status = os.waitpid(pid, 0)
        answer = b"".join(chunks)
        if status == 0 and len(answer) == len(half):
            pairs = zip(half, answer, strict=True)
            self.verdicts.update((task, bool(b)) for (task, _root), b in pairs)

    def record(
        self, task: str, key: str, sig: list[list[Any]], at: int, findings: str | None
    ) -> None:
        """``sig``: the statuses ([rel, is_dir, size, mtime, ctime, inode, device]) taken from
        ``at`` (``time.time_ns()``) on; ``findings``: JSON text, None when not known yet. A
        task with an entry changed within :data:`RACY_NS` of ``at`` is not recorded."""
        trusted_before = at - RACY_NS
        values: list[int] = []
        for _rel, is_dir, size, mtime, ctime, ino, dev in sig:
            if mtime >= trusted_before or ctime >= trusted_before:
                self._forget(task)
                return
            values.extend((_DIR if is_dir else _FILE, size, mtime, ctime, ino, dev))
        packed = _pack(values)
        if packed is None:
            self._forget(task)
            return
        self.tasks[task] = [key, "\0".join(entry[0] for entry in sig), packed, findings]
        self.dirty = True

    def _forget(self, task: str) -> None:
        if self.tasks.pop(task, None) is not None:
            self.dirty = True

    def set_findings(self, task: str, key: str, findings: str) -> bool:
        """Record the findings of a task whose statuses were recorded under ``key``."""
        record = self.tasks.get(task)
        if record is None or record[0] != key:
            return False
        record[3] = findings
        self.dirty = True
        return True

    def record_suite(self, key: str, findings: str) -> None:
        self.suite = {"key": key, "findings": findings}
        self.dirty = True

    def save(self) -> bool:
        """Write the index atomically; False when it cannot be written."""
        if not self.dirty:
            return True
        if not _save(self.path, (self.tasks, self.suite)):
            return False
        self.dirty = False
        return True


class FoundIndex:
    """The task folders found below one folder, and the status of every folder listed to
    find them (``endstate_harness.layout.find_task_dirs``'s ``scanned``)."""

    def __init__(self, folder: Path, head: str) -> None:
        self.path = _index_path(folder, "found", head)

    def find(self, folder: Path, *, save: bool) -> list[Path]:
        """``find_task_dirs(folder)``: from the index when no folder the last search listed
        changed, else searched (and, with ``save``, recorded for the next lint)."""
        root = str(folder)
        found = self.load(root)
        if found is not None:
            return found
        scanned: list[tuple[str, os.stat_result | None]] = []
        at = time.time_ns()
        found = layout.find_task_dirs(folder, scanned)
        if save:
            self.save(root, scanned, at, found)
        return found

    def load(self, root: str) -> list[Path] | None:
        """What the search below ``root`` would find, when every folder it listed last time
        has the same status; None otherwise."""
        data = _load(self.path)
        try:
            names, packed, found = data
            if not isinstance(found, list) or not _unchanged(root, names, packed, follow=True):
                return None
            return [Path(_join(root, rel)) for rel in found]
        except (TypeError, ValueError, AttributeError):
            return None

    def save(
        self, root: str, scanned: list[tuple[str, os.stat_result | None]], at: int,
        found: list[Path],
    ) -> bool:  # fmt: skip
        """Record a search below ``root`` begun at ``at`` (``time.time_ns()``); nothing when a
        folder could not be read or changed within :data:`RACY_NS` of it."""
        prefix = root.rstrip(os.sep) + os.sep
        if not scanned or scanned[0][0] != root:
            return False
        names: list[str | None] = []
        values: list[int] = []
        trusted_before = at - RACY_NS
        for folder, info in scanned:
            if info is None or info.st_mtime_ns >= trusted_before:
                return False
            if info.st_ctime_ns >= trusted_before:
                return False
            names.append("" if folder == root else _rel(prefix, folder))
            values.extend((info.st_mode & _KIND, info.st_size, info.st_mtime_ns,
                           info.st_ctime_ns, info.st_ino, info.st_dev))  # fmt: skip
        packed = _pack(values)
        rels = ["" if str(p) == root else _rel(prefix, str(p)) for p in found]
        if packed is None or None in names or None in rels:
            return False
        return _save(self.path, ("\0".join(n or "" for n in names), packed, rels))


def _rel(prefix: str, path: str) -> str | None:
    return path[len(prefix) :] if path.startswith(prefix) else None


def _join(root: str, rel: str) -> str:
    return root.rstrip(os.sep) + os.sep + rel if rel else root
