"""The one confinement every file tool of the agent goes through (read, write, edit, glob,
grep): a workspace opened as a directory descriptor, and every name under it reached from
that descriptor one component at a time.

Why descriptors and not path strings: the tree is the agent's, made with a shell that can
leave links, fifos, sockets, device nodes and trees deeper than any recursion limit. A path
string is resolved by the kernel at each use, through whatever links are there at that
moment; a component opened with ``O_NOFOLLOW`` relative to its parent's descriptor is exactly
the entry that was checked. So:

* a link is followed only by reading its target text and resolving that here, and only while
  it stays inside the tree (an absolute target, or one that climbs above the root, is
  refused; ``/proc/self/environ`` or the task's holdout can never be named);
* a name is opened ``O_PATH`` first (the inode is held, nothing is opened for reading or
  writing), its type checked with ``fstat``, and only a regular file is reopened through
  ``/proc/self/fd``: a fifo, socket or device is refused without ever being opened, so no
  tool blocks on one or triggers a device's open;
* walks are iterative with a bounded depth and number of entries, and every read and every
  answer is bounded in size, so each call does bounded work.

It is also shipped as text into the sandbox (``python3 -s -S -c <this file> <request>``):
grep runs there, where its regular expression, which can backtrack for ever and cannot be
interrupted inside this process (``re`` holds the GIL), is cut by the sandbox's timeout. So
it imports only the standard library, runs on Python 3.8, and takes nothing from the
working folder (the first statement strips it from ``sys.path``).
"""

import sys

# Shipped with -c, the working folder (the agent's tree) is first on the path: never import
# from it (a planted json.py or re.py would run instead of the standard library's).
sys.path[:] = [p for p in sys.path if p not in ("", ".")]

import fnmatch  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import re  # noqa: E402
import stat  # noqa: E402
from collections.abc import Iterator  # noqa: E402, F401 (named in type comments)

MAX_FILE_BYTES = 8 << 20
"""The most a read, an edit or grep takes of one file (larger files: read them with bash)."""
MAX_OUTPUT_CHARS = 20_000
"""Where glob and grep stop collecting (the tool cuts every answer there too)."""
MAX_LINE_CHARS = 1_000
"""Where one grep hit's line is cut (a minified file is one huge line)."""
MAX_PATH_DEPTH = 128
"""Folders one path may go down, links expanded (each holds a descriptor while resolving)."""
MAX_LINK_HOPS = 40
"""Links one path may go through before it is called a loop (Linux's ELOOP limit)."""
WALK_MAX_DEPTH = 64
"""How deep glob and grep descend: a tree 1,100 folders deep is listed to here, not crashed on."""
WALK_MAX_ENTRIES = 100_000
"""How many entries glob and grep look at before they stop and say so."""

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
_PATH = getattr(os, "O_PATH", 0)
_OPEN = os.O_CLOEXEC | os.O_NONBLOCK | os.O_NOCTTY
REFUSED_EXIT = 3
"""The shipped program's exit code for an expected refusal (its message on stdout)."""


class Refused(Exception):
    """An expected failure, said to the model as a tool error it can act on."""


def _kind(mode):  # type: (int) -> str
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "folder"
    if stat.S_ISLNK(mode):
        return "link"
    if stat.S_ISFIFO(mode):
        return "fifo"
    if stat.S_ISSOCK(mode):
        return "socket"
    return "device"


def _parts(rel):  # type: (object) -> list
    if not isinstance(rel, str) or not rel.strip():
        raise Refused("empty path")
    if "\x00" in rel:
        raise Refused(f"path {rel!r} contains a NUL byte")
    if rel.startswith("/"):
        raise Refused(f"path {rel!r} is absolute; paths are relative to the workspace")
    return [p for p in rel.split("/") if p not in ("", ".")]


def _lstat(name, parent):  # type: (str, int) -> os.stat_result | None
    try:
        return os.stat(name, dir_fd=parent, follow_symlinks=False)
    except FileNotFoundError:
        return None


class Tree:
    """A workspace held by a descriptor; every method reaches names only through it."""

    def __init__(self, root):  # type: (str) -> None
        try:
            self.fd = os.open(root, _DIR)
        except OSError as exc:
            raise Refused(f"the workspace cannot be opened: {exc.strerror or exc}") from None

    def close(self):  # type: () -> None
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self):  # type: () -> Tree
        return self

    def __exit__(self, *exc):  # type: (object) -> None
        self.close()

    # --- resolving a path -------------------------------------------------------------

    def locate(self, rel, make_dirs=False):  # type: (str, bool) -> tuple
        """``(folder descriptor, name)`` of ``rel``, the name None when ``rel`` is a folder
        itself; the caller closes the descriptor. Links on the way are resolved by their
        target text, inside the tree only; missing folders are made when ``make_dirs``."""
        pending = list(reversed(_parts(rel)))
        stack = [os.dup(self.fd)]
        hops = 0
        try:
            while pending:
                part = pending.pop()
                top = stack[-1]
                if part == "..":
                    if len(stack) == 1:
                        raise Refused(f"path {rel!r} leaves the workspace")
                    os.close(stack.pop())
                    continue
                st = _lstat(part, top)
                if st is not None and stat.S_ISLNK(st.st_mode):
                    hops += 1
                    if hops > MAX_LINK_HOPS:
                        raise Refused(f"too many levels of links in {rel!r}")
                    target = os.readlink(part, dir_fd=top)
                    if target.startswith("/") or not target:
                        raise Refused(
                            f"path {rel!r} goes through a link to {target!r}, which leads out "
                            "of the workspace; the file tools follow links only inside it")
                    pending.extend(reversed([p for p in target.split("/") if p not in ("", ".")]))
                    continue
                if not pending:  # the last component, not a link: the caller opens it
                    return stack.pop(), part
                if st is None:
                    if not make_dirs:
                        raise Refused(f"no such file: {rel}")
                    try:
                        os.mkdir(part, 0o777, dir_fd=top)
                    except FileExistsError:
                        pass
                elif not stat.S_ISDIR(st.st_mode):
                    raise Refused(
                        f"{rel}: {part!r} on the way is a {_kind(st.st_mode)}, not a folder")
                if len(stack) >= MAX_PATH_DEPTH:
                    raise Refused(f"path {rel!r} goes more than {MAX_PATH_DEPTH} folders deep")
                try:
                    stack.append(os.open(part, _DIR, dir_fd=top))
                except OSError as exc:  # swapped for a link or a file meanwhile: never followed
                    raise Refused(f"{rel}: {part!r} could not be opened as a folder "
                                  f"({exc.strerror or exc})") from None
            return stack.pop(), None
        finally:
            for fd in stack:
                os.close(fd)

    def open_file(self, parent, name, flags, rel):  # type: (int, str, int, str) -> int
        """A descriptor of the regular file ``name`` in ``parent``, opened with ``flags``.

        Anything else is refused from its ``O_PATH`` descriptor, before it is opened: a fifo
        would block the open, a device's open can act. The regular file is then reopened
        through ``/proc/self/fd``, which names that very inode, whatever the name holds now.
        """
        if not _PATH:  # not Linux: check the name, open it without following, check again
            st = _lstat(name, parent)
            if st is None or not stat.S_ISREG(st.st_mode):
                raise self._not_file(st, rel)
            fd = os.open(name, flags | _OPEN | os.O_NOFOLLOW, dir_fd=parent)
            return self._same(fd, st, rel)
        try:
            held = os.open(name, _PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent)
        except FileNotFoundError:
            raise Refused(f"no such file: {rel}") from None
        try:
            st = os.fstat(held)
            if not stat.S_ISREG(st.st_mode):
                raise self._not_file(st, rel)
            try:
                fd = os.open(f"/proc/self/fd/{held}", flags | _OPEN)
            except FileNotFoundError:  # no /proc: by name, never through a link, and compared
                fd = os.open(name, flags | _OPEN | os.O_NOFOLLOW, dir_fd=parent)
            return self._same(fd, st, rel)
        finally:
            os.close(held)

    @staticmethod
    def _not_file(st, rel):  # type: (os.stat_result | None, str) -> Refused
        if st is None:
            return Refused(f"no such file: {rel}")
        if stat.S_ISDIR(st.st_mode):
            return Refused(f"{rel} is a directory")
        return Refused(f"{rel} is a {_kind(st.st_mode)}, not a regular file; the file tools "
                       "open regular files only")

    @staticmethod
    def _same(fd, st, rel):  # type: (int, os.stat_result, str) -> int
        now = os.fstat(fd)
        if not stat.S_ISREG(now.st_mode) or (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):
            os.close(fd)
            raise Refused(f"{rel} changed while it was being opened")
        return fd

    # --- files ------------------------------------------------------------------------

    def read_bytes(self, rel):  # type: (str) -> bytes
        parent, name = self.locate(rel)
        try:
            if name is None:
                raise Refused(f"{rel} is a directory")
            fd = self.open_file(parent, name, os.O_RDONLY, rel)
        finally:
            os.close(parent)
        try:
            return _read_bounded(fd, rel)
        finally:
            os.close(fd)

    def read_text(self, rel):  # type: (str) -> str
        try:
            return self.read_bytes(rel).decode("utf-8")
        except UnicodeDecodeError:
            raise Refused(f"{rel} is not UTF-8 text") from None

    def write_text(self, rel, text):  # type: (str, str) -> None
        """Replace or create ``rel`` (its folders made as needed); a fifo, device, socket or
        folder there is refused, a link is followed only inside the tree."""
        data = text.encode("utf-8")
        parent, name = self.locate(rel, make_dirs=True)
        try:
            if name is None:
                raise Refused(f"{rel} is a directory")
            if _lstat(name, parent) is None:
                try:
                    fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | _OPEN,
                                 0o666, dir_fd=parent)
                except FileExistsError:
                    raise Refused(f"{rel} appeared while it was being written") from None
            else:
                fd = self.open_file(parent, name, os.O_WRONLY, rel)
        finally:
            os.close(parent)
        try:
            os.ftruncate(fd, 0)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)

    # --- walking ----------------------------------------------------------------------

    def walk(self, prune, notes):  # type: (frozenset, list) -> Iterator[tuple]
        """Yield ``(relative path, kind, folder descriptor, name)`` of every entry that is
        not a folder, folder by folder (its entries sorted, then its subfolders), links
        never followed; ``notes`` gets a line when a limit stopped the walk."""
        seen = 0
        frames = []  # type: list
        try:
            frames.append(self._listing(os.dup(self.fd), "", prune))
            while frames:
                fd, prefix, entries, subdirs = frames[-1]
                if entries:
                    batch, frames[-1] = entries, (fd, prefix, [], subdirs)
                    for name, kind in batch:
                        seen += 1
                        if seen > WALK_MAX_ENTRIES:
                            notes.append(f"(stopped after {WALK_MAX_ENTRIES} entries)")
                            return
                        yield prefix + name, kind, fd, name
                    continue
                if not subdirs:
                    os.close(frames.pop()[0])
                    continue
                name = subdirs.pop(0)
                if len(frames) >= WALK_MAX_DEPTH:
                    if not notes:
                        notes.append(
                            f"(folders more than {WALK_MAX_DEPTH} deep were not searched)")
                    continue
                try:
                    sub = os.open(name, _DIR, dir_fd=fd)
                except OSError:
                    continue  # replaced by a link or a file meanwhile, or unreadable: skipped
                frames.append(self._listing(sub, prefix + name + "/", prune))
        finally:
            for frame in frames:
                os.close(frame[0])

    @staticmethod
    def _listing(fd, prefix, prune):  # type: (int, str, frozenset) -> tuple
        try:
            with os.scandir(fd) as it:
                found = sorted((e.name, e) for e in it if e.name not in prune)
        except OSError:
            found = []
        entries = []
        subdirs = []
        for name, entry in found:
            try:
                if entry.is_dir(follow_symlinks=False):
                    subdirs.append(name)
                    continue
                kind = ("link" if entry.is_symlink() else
                        "file" if entry.is_file(follow_symlinks=False) else "other")
            except OSError:
                continue
            entries.append((name, kind))
        return fd, prefix, entries, subdirs


def _read_bounded(fd, rel):  # type: (int, str) -> bytes
    chunks = []  # type: list
    size = 0
    while True:
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > MAX_FILE_BYTES:
            raise Refused(f"{rel} is larger than {MAX_FILE_BYTES} bytes; read it in parts with "
                          "bash (head, sed)")
        chunks.append(chunk)


def glob_match(rel, pattern):  # type: (str, str) -> bool
    """fnmatch on forward-slash paths, as the graders use (``*`` crosses folders).

    A leading ``**/`` also matches at the top level, so ``**/*.py`` finds ``a.py``.
    """
    if fnmatch.fnmatchcase(rel, pattern):
        return True
    while pattern.startswith("**/"):
        pattern = pattern[3:]
        if fnmatch.fnmatchcase(rel, pattern):
            return True
    return False


# --- the tools' work ------------------------------------------------------------------


def read(tree, path, offset=None, limit=None):  # type: (Tree, str, int | None, int | None) -> str
    text = tree.read_text(path)
    if offset is not None or limit is not None:
        lines = text.splitlines(True)
        start = (offset or 1) - 1
        end = start + limit if limit is not None else len(lines)
        text = "".join(lines[start:end])
    return text


def write(tree, path, content):  # type: (Tree, str, str) -> str
    tree.write_text(path, content)
    return f"wrote {len(content)} characters to {path}"


def edit(tree, path, old, new, replace_all=False):  # type: (Tree, str, str, str, bool) -> str
    text = tree.read_text(path)
    if new and new in text and old not in text.replace(new, "\x00"):
        # Every remaining `old` sits inside an applied `new` (or none is left): the edit is
        # already done. Without this, re-running `demo` -> `demo, fixed` after a resume
        # would give `demo, fixed, fixed`: edit is idempotent only by this rule.
        return f"{path} already has this edit applied; nothing to do"
    count = text.count(old)
    if count == 0:
        raise Refused(f"`old` was not found in {path}")
    if count > 1 and not replace_all:
        raise Refused(f"`old` occurs {count} times; make it unique or set replace_all")
    tree.write_text(path, text.replace(old, new))
    return f"replaced {count} occurrence(s) in {path}"


def glob(tree, pattern, prune):  # type: (Tree, str, frozenset) -> str
    notes = []  # type: list
    hits = [rel for rel, _k, _fd, _n in tree.walk(prune, notes) if glob_match(rel, pattern)]
    return "\n".join(hits + notes) if hits else "\n".join(["(no matches)", *notes])


def grep(tree, pattern, prune, glob_pattern="*", ignore_case=False):
    # type: (Tree, str, frozenset, str, bool) -> str
    try:
        regex = re.compile(pattern, re.IGNORECASE if ignore_case else 0)
    except re.error as exc:
        raise Refused(f"invalid regex: {exc}") from None
    notes = []  # type: list
    hits = []
    size = 0
    for rel, kind, folder, name in tree.walk(prune, notes):
        if kind != "file" or not glob_match(rel, glob_pattern):
            continue  # links are not followed; fifos, sockets, devices never opened
        try:
            fd = tree.open_file(folder, name, os.O_RDONLY, rel)
            try:
                text = _read_bounded(fd, rel).decode("utf-8")
            finally:
                os.close(fd)
        except (Refused, OSError, UnicodeDecodeError):
            continue
        for number, line in enumerate(text.splitlines(), start=1):
            if regex.search(line):
                hits.append(f"{rel}:{number}:{line.rstrip()[:MAX_LINE_CHARS]}")
                size += len(hits[-1]) + 1
        if size > MAX_OUTPUT_CHARS:
            notes.append(f"(stopped after {MAX_OUTPUT_CHARS} characters of matches)")
            break
    return "\n".join(hits + notes) if hits else "\n".join(["(no matches)", *notes])


def perform(root, request):  # type: (str, dict) -> str
    """One tool's work in the tree at ``root``; raises :class:`Refused`."""
    op = request.get("op")
    prune = frozenset(request.get("prune", ()))
    with Tree(root) as tree:
        if op == "read":
            return read(tree, request["path"], request.get("offset"), request.get("limit"))
        if op == "write":
            return write(tree, request["path"], request["content"])
        if op == "edit":
            return edit(tree, request["path"], request["old"], request["new"],
                        bool(request.get("replace_all")))
        if op == "glob":
            return glob(tree, request["pattern"], prune)
        if op == "grep":
            return grep(tree, request["pattern"], prune, request.get("glob", "*"),
                        bool(request.get("ignore_case")))
    raise Refused(f"unknown operation {op!r}")


def main(argv):  # type: (list) -> int
    """The shipped program: one JSON request as the argument, the answer on stdout."""
    code = 0
    try:
        text = perform(".", json.loads(argv[0]))
    except Refused as exc:
        text, code = str(exc), REFUSED_EXIT
    except OSError as exc:
        text, code = f"{type(exc).__name__}: {exc.strerror or exc}", REFUSED_EXIT
    out = sys.stdout.buffer
    out.write(text[: MAX_OUTPUT_CHARS * 2].encode("utf-8", "replace"))
    out.flush()
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
