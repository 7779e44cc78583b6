"""Finding a module's file the way Python's path-based import would, without importing it."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import endstate_author.engine.catalogue.cache as cache
from endstate_harness.layout import PRUNED_NAMES

_SKIP_DIRS = frozenset({"fixture", "holdout", "solution", "defects", "site-packages", "build",
                        "dist", "venv", "env"})
"""Folders never scanned for grader modules by :meth:`Catalogue.all_graders`: task content is
the agent's world, not the suite's graders, and environments are not the suite's either."""


@dataclass(frozen=True)
class Location:
    """A folder searched for the next dotted part, with the root it must stay inside."""

    folder: Path
    root: Path | None


@dataclass(frozen=True)
class Found:
    """A module located: its source file (None for a namespace package or compiled module)."""

    file: Path | None
    package: tuple[Location, ...]
    compiled: bool = False


def _listing(folder: Path) -> dict[str, bool]:
    """name → is_dir (following links, as import does) of a folder; {} if unreadable.

    Names are matched against the listing rather than stat-ed, so a case-insensitive file
    system does not find ``Graders.py`` for ``graders`` (import does not either). Listings
    are cached by the folder's mtime: a suite folder holding 1,000 task folders is listed
    once, not once per task, and a file added to it is seen at once.
    """
    key = str(folder)
    try:
        mtime = folder.stat().st_mtime_ns
    except OSError:
        return {}
    with cache.lock:
        hit = cache.listing_cache.get(key)
        if hit is not None and hit[0] == mtime:
            return hit[1]
    out = _scan(folder)
    if cache.racy(mtime):
        return out
    with cache.lock:
        cache.listing_cache[key] = (mtime, out)
        while len(cache.listing_cache) > cache.CACHE_SIZE:
            cache.listing_cache.popitem(last=False)
    return out


def _scan(folder: Path) -> dict[str, bool]:
    out: dict[str, bool] = {}
    try:
        with os.scandir(folder) as it:
            for entry in it:
                try:
                    out[entry.name] = entry.is_dir()
                except OSError:
                    continue
    except OSError:
        return {}
    return out


def inside(path: Path, root: Path | None) -> bool:
    """Whether ``path``, links followed, stays inside ``root`` (already resolved)."""
    if root is None:
        return True
    try:
        return path.resolve().is_relative_to(root)
    except (OSError, RuntimeError):
        return False


def find_in(
    locations: Sequence[Location], parts: Sequence[str], notes: list[str]
) -> Found | None:
    """Mimic importlib's FileFinder over ``locations`` for the dotted ``parts``.

    Per folder: a package dir with ``__init__.py`` wins, then ``part.py`` (or a compiled
    extension), else a plain dir is remembered as a namespace portion and the search goes
    on; portions are used only when nothing else is found. A candidate that is a symlink
    leading outside its search root is skipped and noted, never followed.
    """
    current = list(locations)
    found: Found | None = None
    for depth, part in enumerate(parts):
        found = None
        portions: list[Location] = []
        for loc in current:
            entries = _listing(loc.folder)
            if not entries:
                continue
            pkg = loc.folder / part
            if entries.get(part) is True:
                init = pkg / "__init__.py"
                if init.is_file():
                    if inside(init, loc.root):
                        found = Found(init, (Location(pkg, loc.root),))
                        break
                    notes.append(f"{init} leads outside {loc.root} and is not followed")
                    continue
            module_file = loc.folder / f"{part}.py"
            if entries.get(f"{part}.py") is False:
                if inside(module_file, loc.root):
                    found = Found(module_file, ())
                    break
                notes.append(f"{module_file} leads outside {loc.root} and is not followed")
                continue
            compiled = [f"{part}{s}" for s in importlib.machinery.EXTENSION_SUFFIXES]
            if any(entries.get(c) is False for c in compiled):
                found = Found(None, (), compiled=True)
                break
            if entries.get(part) is True:
                if inside(pkg, loc.root):
                    portions.append(Location(pkg, loc.root))
                else:
                    notes.append(f"{pkg} leads outside {loc.root} and is not followed")
        if found is None and portions:
            found = Found(None, tuple(portions))
        if found is None:
            return None
        if depth + 1 < len(parts):
            if not found.package:
                return None  # a module, not a package: ``a.b`` cannot be below it
            current = list(found.package)
    return found


_env_lock = threading.Lock()


def find_installed(parts: Sequence[str], notes: list[str]) -> Found | None:
    """Locate a module among the installed packages without executing any of it.

    Only the top-level name goes to :func:`importlib.util.find_spec` (for a top-level name
    that only consults the finders; a dotted name would import its parents). The rest of
    the path is searched as files below the location found.
    """
    top = parts[0]
    try:
        with _env_lock:
            spec = importlib.util.find_spec(top)
    except Exception:  # a broken finder, or a sys.modules entry without a spec
        return None
    if spec is None:
        return None
    locations = list(spec.submodule_search_locations or [])
    origin = spec.origin if spec.has_location else None
    if len(parts) == 1:
        if origin and origin.endswith(".py"):
            return Found(Path(origin), tuple(Location(Path(p), None) for p in locations))
        return Found(None, tuple(Location(Path(p), None) for p in locations),
                      compiled=not locations)
    if not locations:
        if origin and origin.endswith(".py"):
            notes.append(f"{top!r} is installed as a module ({origin}), not a package")
            return None
        # frozen or built-in (``os.path``): lint cannot look inside, so it does not accuse
        return Found(None, (), compiled=True)
    return find_in([Location(Path(p), None) for p in locations], parts[1:], notes)


def modules_below(root: Path, budget: list[int], max_depth: int = 4) -> Iterable[tuple[str, Path]]:
    """(dotted name, file) of the Python modules below ``root`` that could be imported from it."""
    stack: list[tuple[Path, tuple[str, ...]]] = [(root, ())]
    while stack and budget[0] > 0:
        folder, prefix = stack.pop()
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            budget[0] -= 1
            if budget[0] <= 0:
                return
            name = entry.name
            try:
                is_link = entry.is_symlink()
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                continue
            if is_link:
                continue
            if is_dir:
                if (name in PRUNED_NAMES or name in _SKIP_DIRS or name.startswith(".")
                        or not name.isidentifier() or len(prefix) >= max_depth):
                    continue
                stack.append((Path(entry.path), (*prefix, name)))
            elif name.endswith(".py"):
                stem = name[:-3]
                if stem == "__init__":
                    if prefix:
                        yield ".".join(prefix), Path(entry.path)
                elif stem.isidentifier():
                    yield ".".join((*prefix, stem)), Path(entry.path)
