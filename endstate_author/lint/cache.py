"""Lint's persistent cache: an unchanged task answers with the findings it had last time."""

from __future__ import annotations

import json
import os
import stat
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from endstate_author import __version__
from endstate_author.engine.config import Config
from endstate_author.engine.diagnostics import Diagnostic, FileCreate, Fix, TextEdit
from endstate_author.lint.index import FoundIndex, SuiteIndex, blake2b
from endstate_harness import layout
from endstate_harness.layout import TASK_FILE

CACHE_ENV = "ENDSTATE_AUTHOR_LINT_CACHE"
"""Names lint's cache folder, overriding the XDG default (as ``$ENDSTATE_AUTHOR_CACHE`` does
prove's)."""

FORMAT = "1"
"""The entry format; part of every key, so a new format never reads an old entry."""

BUILTIN_MODULES = frozenset({"endstate.evals.graders", "endstate_harness.graders"})
"""The grader library's two module names (endstate 0.3.0's, and the harness's own): a name in
one of them resolves without reading any file of the suite (tests check these are the
harness's ``REFERENCE_MODULE`` and ``THIS_MODULE``)."""

MAX_ENTRIES = 20_000
"""A task folder with more entries than this is not cached (hashing it would cost more than
it saves, and the rules stop listing trees long before)."""

MAX_FILE_BYTES = 64 << 20
"""A task holding a file over this size is not cached."""


def default_root() -> Path | None:
    """Where the cache lives: ``$ENDSTATE_AUTHOR_LINT_CACHE``, else in the XDG cache folder;
    None when there is no home folder to put it in."""
    explicit = os.environ.get(CACHE_ENV)
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    try:
        base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".cache"
    except (RuntimeError, KeyError, OSError):
        return None
    return base / "endstate-author" / "lint"


def _package_dirs() -> list[str]:
    """The folders of the toolkit's two packages (the harness's found through its module
    that lint imports anyway)."""
    return [
        os.path.dirname(os.path.abspath(__file__)),
        os.path.dirname(os.path.abspath(layout.__file__)),
    ]


_TOOL: str | None = None


def tool_fingerprint() -> str:
    """The tool's own identity: version, Python, and every file of its two packages (name,
    size, modification time), computed once per process."""
    global _TOOL
    if _TOOL is None:
        digest = blake2b(digest_size=20)
        digest.update(f"{FORMAT}\0{__version__}\0{sys.version}\0{sys.executable}\0".encode())
        for folder in _package_dirs():
            digest.update(f"D{folder}\0".encode())
            stack = [folder]
            while stack:
                current = stack.pop()
                try:
                    with os.scandir(current) as it:
                        entries = sorted(it, key=lambda e: e.name)
                except OSError:
                    continue
                for entry in entries:
                    if entry.name == "__pycache__":
                        continue
                    try:
                        info = entry.stat(follow_symlinks=True)
                    except OSError:
                        continue
                    if stat.S_ISDIR(info.st_mode):
                        stack.append(entry.path)
                    digest.update(
                        f"{entry.path}\0{info.st_size}\0{info.st_mtime_ns}\0".encode(
                            "utf-8", "surrogatepass"
                        )
                    )
        _TOOL = digest.hexdigest()
    return _TOOL


def config_fingerprint(config: Config) -> str:
    """Every setting of ``config`` that can change a finding, as one string."""
    return json.dumps(
        [
            list(config.select),
            list(config.ignore),
            sorted(config.severity.items()),
            [[k, list(v)] for k, v in config.per_task_ignores.items()],
            [str(p) for p in config.grader_paths],
            str(config.source) if config.source is not None else None,
        ]
    )


def _names_are_builtin(raw: bytes) -> bool:
    """Whether every grader name in the manifest resolves in the library alone.

    Conservative: every string under any ``"name"`` key anywhere in the document (duplicates
    included) must split into one of :data:`BUILTIN_MODULES`; invalid JSON answers False."""
    names: list[str] = []

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        names.extend(v for k, v in items if k == "name" and isinstance(v, str))
        return dict(items)

    try:
        json.loads(raw, object_pairs_hook=pairs)
    except (ValueError, RecursionError):
        return False
    for name in names:
        module, sep, _function = name.partition(":")
        if not sep:
            module, _, _function = name.rpartition(".")
        if module not in BUILTIN_MODULES:
            return False
    return True


def _read(path: str) -> tuple[bytes, os.stat_result] | None:
    """A regular file's bytes (never through a link) and its status taken before they were
    read; None when unreadable or too large."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_FILE_BYTES:
            return None
        chunks = []
        size = 0
        want = info.st_size + 1  # one byte more than the size: a short read is the end
        while True:
            chunk = os.read(fd, want)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            if size > MAX_FILE_BYTES:
                return None
            if len(chunk) < want:
                break
            want = 1 << 16
        return b"".join(chunks), info
    except OSError:
        return None
    finally:
        os.close(fd)


def _by_name(entry: os.DirEntry[str]) -> str:
    return entry.name


Signature = list[list[Any]]
"""[rel, is_dir, size, mtime_ns, ctime_ns, inode, device] of a task folder's every entry (the folder
itself as ""), taken before its content was read: :mod:`endstate_author.lint.index`."""


def _status(rel: str, is_dir: bool, info: os.stat_result) -> list[Any]:
    return [rel, is_dir, info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino,
            info.st_dev]  # fmt: skip


def _hash_tree(root: str, digest: Any, sig: Signature | None = None) -> bool:
    """Feed every entry below ``root`` into ``digest``; False when the task must not be cached
    (a symlink, a special file, too many entries, a file too large, anything unreadable).

    Names, kinds and bytes are what the rules read (no rule reads a mode or a time); kinds come
    from the directory listing itself, so an unchanged folder costs one open per file."""
    cut = len(root) + 1
    stack = [root]
    count = 0
    manifest_ok = False
    while stack:
        folder = stack.pop()
        try:
            if sig is not None:  # before the listing: an entry added later changes it
                sig.append(_status(folder[cut:], True, os.lstat(folder)))
            with os.scandir(folder) as it:
                entries = sorted(it, key=_by_name)
        except OSError:
            return False
        count += len(entries)
        if count > MAX_ENTRIES:
            return False
        for entry in entries:
            rel = entry.path[cut:].encode("utf-8", "surrogatepass")
            try:
                if entry.is_symlink():
                    return False  # findings may depend on where it points
                if entry.is_dir(follow_symlinks=False):
                    digest.update(b"d\0%s\0" % rel)
                    stack.append(entry.path)
                    continue
                if not entry.is_file(follow_symlinks=False):
                    return False  # a fifo, a socket, a device
            except OSError:
                return False
            read = _read(entry.path)
            if read is None:
                return False
            data, info = read
            if sig is not None:
                sig.append(_status(entry.path[cut:], False, info))
            digest.update(b"f%d\0%s\0" % (len(data), rel))
            digest.update(data)
            if folder == root and entry.name == TASK_FILE:
                manifest_ok = _names_are_builtin(data)
        digest.update(b"/\0")
    return manifest_ok


def _entry_to_json(d: Diagnostic) -> dict[str, Any]:
    out: dict[str, Any] = {
        "code": d.code, "severity": d.severity, "message": d.message, "file": str(d.file),
        "line": d.line, "column": d.column, "end_line": d.end_line, "end_column": d.end_column,
        "start_offset": d.start_offset, "end_offset": d.end_offset, "rule": d.rule,
        "related": list(d.related), "hint": d.hint,
    }  # fmt: skip
    if d.fix is not None:
        out["fix"] = {
            "title": d.fix.title,
            "safe": d.fix.safe,
            "edits": [[str(e.file), e.start, e.end, e.new_text] for e in d.fix.edits],
            "creates": [[str(c.file), c.content] for c in d.fix.creates],
        }
    return out


def _encode(found: list[Diagnostic]) -> str:
    """Findings as the index keeps them: JSON text (ASCII, so any string round-trips)."""
    return json.dumps([_entry_to_json(d) for d in found], separators=(",", ":"))


def _decode(text: Any) -> list[Diagnostic] | None:
    """:func:`_encode`'s findings back; None when ``text`` is not such findings."""
    if text == "[]":
        return []  # most tasks' (a thousand json.loads cost a few ms)
    if not isinstance(text, str):
        return None
    try:
        return [_entry_from_json(item) for item in json.loads(text)]
    except (KeyError, TypeError, ValueError, IndexError, AttributeError):
        return None


def _entry_from_json(item: dict[str, Any]) -> Diagnostic:
    fix = None
    if item.get("fix") is not None:
        f = item["fix"]
        fix = Fix(
            title=f["title"],
            edits=tuple(TextEdit(Path(p), int(s), int(e), t) for p, s, e, t in f["edits"]),
            creates=tuple(FileCreate(Path(p), c) for p, c in f["creates"]),
            safe=bool(f["safe"]),
        )
    return Diagnostic(
        code=item["code"], severity=item["severity"], message=item["message"],
        file=Path(item["file"]), line=item["line"], column=item["column"],
        end_line=item["end_line"], end_column=item["end_column"],
        start_offset=item["start_offset"], end_offset=item["end_offset"], fix=fix,
        rule=item["rule"], related=list(item["related"]), hint=str(item.get("hint", "")),
    )  # fmt: skip


class LintCache:
    """Findings by key, in files under ``folder``."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.writable = True
        self.hits = 0
        self.misses = 0
        self.unread = 0  # tasks answered by the suite's index, without reading their files
        self._indexes: dict[tuple[str, ...], SuiteIndex] = {}
        self._seen: dict[tuple[int, Path], tuple[Config, SuiteIndex]] = {}

    @classmethod
    def default(cls) -> LintCache | None:
        """The user's cache; None (lint uncached) when there is no folder for it."""
        root = default_root()
        return cls(root) if root is not None else None

    # ----- keys -----------------------------------------------------------------------

    def task_key(
        self, task: Path, suite: Path, config: Config, sig: Signature | None = None
    ) -> str | None:
        """The key of one task's findings, or None when the task cannot be cached; ``sig``
        collects the status of every entry hashed (for the suite's index)."""
        root = os.path.abspath(task)
        try:
            if os.path.islink(task) or not os.path.isdir(root):
                return None
        except (OSError, ValueError):
            return None
        digest = blake2b(digest_size=24)
        head = [tool_fingerprint(), config_fingerprint(config), str(task), root, str(suite)]
        digest.update("\0".join(head).encode("utf-8", "surrogatepass") + b"\0\0")
        if not _hash_tree(root, digest, sig):
            return None
        return "t" + digest.hexdigest()

    def suite_key(self, suite: Path, config: Config, task_keys: Iterable[str | None]) -> str | None:
        """The key of the suite-wide rules' findings over these tasks (None if any is None)."""
        keys = list(task_keys)
        if any(k is None for k in keys):
            return None
        digest = blake2b(digest_size=24)
        head = [tool_fingerprint(), config_fingerprint(config), str(suite), *map(str, keys)]
        digest.update("\0".join(head).encode("utf-8", "surrogatepass"))
        return "s" + digest.hexdigest()

    # ----- look-ups through the suite's index ------------------------------------------

    def find_tasks(self, folder: Path) -> list[Path]:
        """``find_task_dirs(folder)``, through the folder's :class:`FoundIndex`."""
        head = "\0".join(("found", tool_fingerprint(), str(folder), os.path.abspath(folder)))
        return FoundIndex(self.folder / "index", head).find(folder, save=self.writable)

    def _index(self, suite: Path, config: Config) -> SuiteIndex:
        # one fingerprint per (suite, config) per run; the config is kept so its id stays its
        seen = self._seen.get((id(config), suite))
        if seen is not None and seen[0] is config:
            return seen[1]
        head = (tool_fingerprint(), config_fingerprint(config), str(suite), os.path.abspath(suite))
        if head not in self._indexes:
            self._indexes[head] = SuiteIndex.for_suite(self.folder / "index", "\0".join(head))
        self._seen[(id(config), suite)] = (config, self._indexes[head])
        return self._indexes[head]

    def prefetch(self, jobs: Iterable[tuple[Path, Path, Config]]) -> None:
        """Check the recorded tasks of these jobs ahead of :meth:`lookup`, in parallel."""
        groups: dict[int, tuple[SuiteIndex, list[tuple[str, str]]]] = {}
        for task, suite, config in jobs:
            index = self._index(suite, config)
            groups.setdefault(id(index), (index, []))[1].append(
                (str(task), os.path.abspath(task))
            )
        for index, items in groups.values():
            index.verify_many(items)

    def lookup(
        self, task: Path, suite: Path, config: Config
    ) -> tuple[str | None, list[Diagnostic] | None]:
        """(key, findings) of one task: the key None when it cannot be cached, the findings
        None when the cache does not hold them. An unchanged folder (its entries' statuses,
        :mod:`endstate_author.lint.index`) is not read again."""
        index = self._index(suite, config)
        record = index.known(str(task), os.path.abspath(task))
        if record is not None:
            known = _decode(record[1])
            if known is not None:
                self.hits += 1
                self.unread += 1
                return record[0], known
            # unreadable findings: hashed again below
        sig: Signature = []
        at = time.time_ns()
        key = self.task_key(task, suite, config, sig)
        if key is None:
            return None, None
        found = self.get(key)
        index.record(str(task), key, sig, at, None if found is None else _encode(found))
        return key, found

    def store(
        self, task: Path, suite: Path, config: Config, key: str, found: list[Diagnostic]
    ) -> None:
        """Keep one task's findings under ``key`` (and in the suite's index)."""
        self.put(key, found)
        self._index(suite, config).set_findings(str(task), key, _encode(found))

    def lookup_suite(
        self, suite: Path, config: Config, task_keys: Iterable[str | None]
    ) -> tuple[str | None, list[Diagnostic] | None]:
        """(key, findings) of the suite-wide rules over these tasks, as :meth:`lookup`."""
        key = self.suite_key(suite, config, task_keys)
        if key is None:
            return None, None
        recorded = self._index(suite, config).suite
        if recorded.get("key") == key:
            found = _decode(recorded.get("findings"))
            if found is not None:
                self.hits += 1
                return key, found
        return key, self.get(key)

    def store_suite(self, suite: Path, config: Config, key: str, found: list[Diagnostic]) -> None:
        self.put(key, found)
        self._index(suite, config).record_suite(key, _encode(found))

    def flush(self) -> None:
        """Write the suites' indexes (nothing when the cache is not writable)."""
        self._seen.clear()  # a configuration may be changed before the next run
        for index in self._indexes.values():
            if self.writable and not index.save():
                self.writable = False

    # ----- entries --------------------------------------------------------------------

    def _path(self, key: str) -> Path:
        return self.folder / key[1:3] / f"{key}.json"

    def get(self, key: str) -> list[Diagnostic] | None:
        """The findings stored under ``key``; None when absent, unreadable or corrupt."""
        try:
            with open(self._path(key), "rb") as handle:
                data = json.loads(handle.read())
            if not isinstance(data, dict) or data.get("key") != key:
                raise ValueError("not an entry for this key")
            found = [_entry_from_json(item) for item in data["findings"]]
        except (OSError, ValueError, KeyError, TypeError, IndexError):
            self.misses += 1
            return None
        self.hits += 1
        return found

    def put(self, key: str, diagnostics: Iterable[Diagnostic]) -> None:
        """Store the findings under ``key`` atomically; silently nothing when not writable."""
        if not self.writable:
            return
        path = self._path(key)
        tmp = None
        try:
            body = json.dumps(  # ASCII: any string, a lone surrogate included, round-trips
                {"key": key, "findings": [_entry_to_json(d) for d in diagnostics]},
                separators=(",", ":"),
            ).encode("ascii")
            import tempfile  # deferred, as in lintindex: only a write needs it

            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=path.parent)
            with os.fdopen(fd, "wb") as handle:
                handle.write(body)
            os.replace(tmp, path)
            tmp = None
        except (OSError, ValueError):
            self.writable = False  # read-only or full: this run goes on uncached
        finally:
            if tmp is not None:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass
