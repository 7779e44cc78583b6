"""The judge's trusted files, read once at its start: what its imports and reads of them get.

Why: the judge reads the trusted tests and their data files before any code of the end state
starts (the harness starts the child only once the judge says it has them). After that, an
import of a trusted module or an ``open`` of a trusted file is answered from that copy, never
from disk, so nothing that runs later can change what the tests are or what they read. The
folder stays on disk for what lists or tests paths (unittest's discovery, ``os.path.exists``):
a file that appears there later is not trusted (importing or opening it fails) and one that
disappears fails the test that looks for it, never passes it.
"""

from __future__ import annotations

import builtins
import errno
import importlib.abc
import importlib.machinery
import importlib.util
import io
import os
import sys
import types
from collections.abc import Sequence
from typing import Any


def read_tree(root: str) -> dict[str, bytes]:
    """Every regular file under ``root`` by absolute path (links never followed)."""
    found: dict[str, bytes] = {}
    for folder, dirs, files in os.walk(root, followlinks=False):
        for name in files:
            path = os.path.join(folder, name)
            if not os.path.islink(path) and os.path.isfile(path):
                with open(path, "rb") as handle:
                    found[os.path.abspath(path)] = handle.read()
        dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(folder, d))]
    return found


class TrustedFiles:
    """The trusted folder's files in memory, and the hooks that serve them."""

    def __init__(self, root: str) -> None:
        self.root = os.path.abspath(root)
        self.files = read_tree(self.root)
        self._open = builtins.open

    def inside(self, path: str) -> bool:
        return path == self.root or path.startswith(self.root + os.sep)

    def install(self) -> None:
        """Trusted modules load from memory; ``open`` of a trusted path reads memory."""
        sys.meta_path.insert(0, _MemoryFinder(self))
        builtins.open = io.open = self.open  # type: ignore[assignment]

    def open(self, file: Any, mode: str = "r", buffering: int = -1,
             encoding: str | None = None, errors: str | None = None,
             newline: str | None = None, closefd: bool = True, opener: Any = None) -> Any:
        if isinstance(file, str | bytes | os.PathLike):
            path = os.path.abspath(os.fsdecode(file))
            if self.inside(path):
                return self._read(path, mode, encoding, errors, newline)
        return self._open(file, mode, buffering, encoding, errors, newline, closefd, opener)

    def _read(self, path: str, mode: str, encoding: str | None, errors: str | None,
              newline: str | None) -> Any:
        if any(flag in mode for flag in "wax+"):
            raise PermissionError(errno.EACCES, "the judge's trusted files are read-only", path)
        data = self.files.get(path)
        if data is None:
            raise FileNotFoundError(errno.ENOENT, "not a trusted file of the judge", path)
        raw = io.BytesIO(data)
        if "b" in mode:
            return raw
        return io.TextIOWrapper(raw, encoding=encoding, errors=errors, newline=newline)


class _MemoryLoader(importlib.abc.InspectLoader):
    """A trusted module, compiled from the bytes read at the judge's start."""

    def __init__(self, trusted: TrustedFiles, path: str) -> None:
        self.trusted = trusted
        self.path = path

    def _data(self) -> bytes:
        data = self.trusted.files.get(self.path)
        if data is None:
            raise ImportError(f"{self.path} is not a trusted file of the judge", path=self.path)
        return data

    def get_source(self, fullname: str) -> str:
        return importlib.util.decode_source(self._data())

    def is_package(self, fullname: str) -> bool:
        return os.path.basename(self.path) == "__init__.py"

    def exec_module(self, module: types.ModuleType) -> None:
        code = compile(self._data(), self.path, "exec", dont_inherit=True)
        exec(code, module.__dict__)


class _MemoryFinder(importlib.abc.MetaPathFinder):
    """Modules found under the trusted folder load through :class:`_MemoryLoader`."""

    def __init__(self, trusted: TrustedFiles) -> None:
        self.trusted = trusted

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: types.ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        origin = spec.origin if spec is not None else None
        if spec is None or origin is None or not self.trusted.inside(os.path.abspath(origin)):
            return None
        origin = os.path.abspath(origin)
        if not origin.endswith(".py"):
            raise ImportError(f"{origin} is not a trusted module of the judge", path=origin)
        return importlib.util.spec_from_file_location(
            fullname, origin, loader=_MemoryLoader(self.trusted, origin),
            submodule_search_locations=spec.submodule_search_locations,
        )
