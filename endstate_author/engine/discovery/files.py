"""Which files of a tree a test command runs as test modules: :func:`test_files`.

unittest discovery (pattern, identifier names, packages only below the start folder), named
unittest modules, and pytest's default file names below its targets, over a tree listing
(``{rel: entry}``) rather than the disk, so lint answers from the listing it already holds.
"""

from __future__ import annotations

import fnmatch
import posixpath
import re
from collections.abc import Iterable, Mapping
from typing import Protocol

from endstate_author.engine.discovery.command import TestCommand, tree_join
from endstate_harness.layout import PRUNED_NAMES

_VALID_MODULE = re.compile(r"^[_a-z]\w*\.py$", re.IGNORECASE)
"""unittest only imports files whose name is an identifier plus ``.py`` (loader.py)."""
_PYTEST_NORECURSE = frozenset(
    {"build", "dist", "node_modules", "venv", "CVS", "_darcs", "{arch}", "__pycache__"}
)


class _Entry(Protocol):
    """What :func:`test_files` needs of a tree entry (``context.TreeEntry`` fits)."""

    @property
    def is_dir(self) -> bool: ...

    @property
    def is_symlink(self) -> bool: ...


def _under(path: str, folder: str) -> bool:
    return folder == "." or path == folder or path.startswith(folder + "/")


def _parts_between(folder: str, path: str) -> list[str]:
    """The folders strictly between ``folder`` and the file ``path`` (tree-relative)."""
    rel = path if folder == "." else path[len(folder) + 1 :]
    parts = rel.split("/")[:-1]
    out, cur = [], folder
    for part in parts:
        cur = part if cur == "." else f"{cur}/{part}"
        out.append(cur)
    return out


def is_test_file_name(path: str) -> bool:
    """pytest's default test file names (``test_*.py``, ``*_test.py``), also unittest's usual."""
    name = posixpath.basename(path)
    return name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py"))


def _copy_pruned(path: str) -> bool:
    """Inside a folder the sandbox copy drops (``.git``, ``__pycache__``, ``.venv``...)."""
    return any(part in PRUNED_NAMES for part in path.split("/"))


def _pruned(path: str) -> bool:
    return any(p.startswith(".") or p in _PYTEST_NORECURSE for p in path.split("/")[:-1])


def test_files(entries: Mapping[str, _Entry], cmd: TestCommand) -> list[str]:
    """The files of a tree (``{rel: entry}``) that ``cmd`` would run as test modules.

    unittest discovery: files below the start folder whose name matches the pattern (and is
    an identifier plus ``.py``), in sub-folders that are packages (``__init__.py``), as
    unittest 3.11+ skips the others. Named unittest modules: the files they name. pytest:
    ``test_*.py``/``*_test.py`` below each target folder, and the target files themselves.
    ``unknown``: nothing.
    """
    files = {rel for rel, e in entries.items() if not e.is_dir and not _copy_pruned(rel)}
    dirs = {rel for rel, e in entries.items() if e.is_dir and not e.is_symlink}
    out: set[str] = set()
    if cmd.runner == "unittest-discover" and cmd.start_dir is not None:
        start = cmd.start_dir
        for rel in files:
            if not _under(rel, start) or rel == start:
                continue
            name = posixpath.basename(rel)
            if not _VALID_MODULE.match(name) or not fnmatch.fnmatch(name, cmd.pattern):
                continue
            between = _parts_between(start, rel)
            if all(f"{d}/__init__.py" in files for d in between):
                out.add(rel)
    elif cmd.runner == "unittest-modules":
        for target, name in zip(cmd.targets, cmd.module_names or cmd.targets, strict=False):
            path = target if target.endswith(".py") else _module_file(files, cmd.cwd, name)
            if path is not None and path in files:
                out.add(path)
    elif cmd.runner == "pytest":
        for target in cmd.targets or (cmd.cwd,):
            if target in files:
                out.add(target)
            elif target in dirs or target == ".":
                out.update(
                    rel
                    for rel in files
                    if _under(rel, target) and is_test_file_name(rel) and not _pruned(rel)
                )
    return sorted(out)


test_files.__test__ = False  # type: ignore[attr-defined]  # not a pytest test


def _module_file(files: Iterable[str], cwd: str, name: str) -> str | None:
    """The file a dotted unittest name loads (``tests.test_x.Case.test_y`` → tests/test_x.py)."""
    pool = set(files)
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        base = "/".join(parts[:cut])
        for candidate in (f"{base}.py", f"{base}/__init__.py"):
            path = tree_join(cwd, candidate)
            if path is not None and path in pool:
                rest = parts[cut:]
                if candidate.endswith("__init__.py") and rest and rest[0][:1].islower():
                    return None  # `tests.test_gone`: a missing module, not a class of tests
                return path
    return None


def missing_module_targets(files: Iterable[str], cmd: TestCommand) -> list[str]:
    """Named unittest modules / pytest file targets that no file of ``files`` provides."""
    pool = set(files)
    out: list[str] = []
    if cmd.runner == "unittest-modules":
        for target, name in zip(cmd.targets, cmd.module_names or cmd.targets, strict=False):
            path = target if target.endswith(".py") else _module_file(pool, cmd.cwd, name)
            if path is None or path not in pool:
                out.append(name)
    return out
