"""The grader catalogue: what a grader name in task.json points at, found without running it.

Lint, completion and hover need a grader's signature, but a suite's grader module is code the
author has not finished (it may not import, may print, may write files, may raise at import).
So this module **never imports or executes suite code**: it finds the module's file the way
Python's path-based import would, parses it with :mod:`ast`, and reads each function's
signature off the syntax tree.

Where names are looked up (task-format.md §7, the same order the harness imports with, see
:func:`endstate_harness.graders.grader_search_paths`): the task's own folder, the suite folder,
the project root, then ``grader-paths`` from config. A module not found there may still be an
installed package (``mypkg.graders`` in site-packages); for that, only the *top-level* name is
asked of :func:`importlib.util.find_spec`, which locates a top-level module without executing it
(a dotted name would import its parent packages), and the rest of the dotted path is searched
as files below the location found.

Built-in graders (``endstate.evals.graders:<x>``, which the harness aliases to its own library,
and ``endstate_harness.graders:<x>``) come from the harness's own tables and
:func:`inspect.signature`; the ``endstate`` package is never imported, installed or not.

Parsed modules are cached by (path, mtime, size), so a suite of 1,000 tasks sharing one grader
module parses it once, and an edited module is parsed again.
"""

from __future__ import annotations

import ast
import importlib.machinery
import importlib.util
import inspect
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from endstate_author.suggest import closest

if TYPE_CHECKING:
    from endstate_author.config import Config

ParamKind = Literal["positional", "keyword", "var_keyword", "var_positional"]

MAX_MODULE_BYTES = 2 << 20
"""A grader module larger than this is not parsed (its signatures count as unknown)."""


_SKIP_DIRS = frozenset({"fixture", "holdout", "solution", "defects", "site-packages", "build",
                        "dist", "venv", "env"})
"""Folders never scanned for grader modules by :meth:`Catalogue.all_graders`: task content is
the agent's world, not the suite's graders, and environments are not the suite's either."""


@dataclass(frozen=True)
class ParamInfo:
    """One parameter of a grader, as written in its source.

    ``kind``: ``positional`` (can be passed by position; ``positional_only`` says whether it
    can also be passed by keyword), ``keyword`` (keyword-only), ``var_positional`` (``*args``),
    ``var_keyword`` (``**kwargs``). ``annotation`` and ``default`` are source text (None when
    absent). ``required``: no default and not a ``*``/``**`` parameter.
    """

    name: str
    kind: ParamKind
    annotation: str | None = None
    default: str | None = None
    required: bool = False
    positional_only: bool = False

    @property
    def by_keyword(self) -> bool:
        """Whether ``args`` can supply it (args are bound as keyword arguments)."""
        return self.kind == "keyword" or (self.kind == "positional" and not self.positional_only)


@dataclass(frozen=True)
class GraderInfo:
    """A resolved grader: where it is defined and what it takes.

    ``name`` is the name as looked up, in ``module:function`` form; ``module`` is the module the
    name says. ``file``/``line``/``column``/``end_line``/``end_column`` (1-based, end exclusive)
    span ``def name`` in the module that defines it (after following re-exports), so a finding
    about the signature can be shown on that line. ``signature_known`` is False when the name
    exists but its signature cannot be read statically (a class, an assignment such as
    ``check = make_check(...)``, a compiled module, a module ``__getattr__``); rules must not
    judge ``params`` then.
    """

    name: str
    module: str
    function: str
    params: list[ParamInfo]
    doc: str
    file: Path | None
    line: int
    column: int
    end_line: int
    end_column: int
    builtin: bool
    signature_known: bool = True

    @property
    def canonical(self) -> str:
        """One spelling per grader: built-ins as ``endstate_harness.graders:<x>``."""
        if self.builtin:
            return f"{_this_module()}:{self.function}"
        return f"{self.module}:{self.function}"

    def param(self, name: str) -> ParamInfo | None:
        for p in self.params:
            if p.name == name:
                return p
        return None

    @property
    def signature(self) -> str:
        """``(sandbox, *, paths: list[str], name: str = "")`` for hover and messages."""
        parts: list[str] = []
        star_done = False
        for i, p in enumerate(self.params):
            if p.kind == "keyword" and not star_done:
                parts.append("*")
                star_done = True
            text = p.name
            if p.kind == "var_positional":
                text, star_done = "*" + p.name, True
            elif p.kind == "var_keyword":
                text = "**" + p.name
            if p.annotation:
                text += f": {p.annotation}"
            if p.default is not None:
                text += f" = {p.default}" if p.annotation else f"={p.default}"
            parts.append(text)
            nxt = self.params[i + 1] if i + 1 < len(self.params) else None
            if p.positional_only and (nxt is None or not nxt.positional_only):
                parts.append("/")
        return "(" + ", ".join(parts) + ")"


ErrorKind = Literal["bad-name", "no-module", "no-function", "syntax-error", "unreadable"]


@dataclass(frozen=True)
class Resolution:
    """The answer of :meth:`Catalogue.lookup`: an info, or a precise error.

    ``error`` is a sentence fragment ready to follow "grader 'x' cannot be found: ".
    ``suggestions`` are full grader names the author may have meant (best first);
    ``searched`` the folders looked in; ``file``/``line`` where a syntax error is.
    """

    info: GraderInfo | None = None
    kind: ErrorKind | None = None
    error: str | None = None
    suggestions: tuple[str, ...] = ()
    searched: tuple[Path, ...] = ()
    file: Path | None = None
    line: int | None = None

    @property
    def ok(self) -> bool:
        return self.info is not None


# ----- names ----------------------------------------------------------------------------------


def split_name(name: str) -> tuple[str, str] | None:
    """(module, function) of ``module:function`` or last-dot ``module.function``; None if
    the name has neither shape, or its parts are not Python identifiers.

    Same split as the harness (a colon first, else the last dot), plus the identifier check
    the harness leaves to the import (which then fails with a less helpful message).
    """
    module, sep, attribute = name.partition(":")
    if not sep:
        module, _, attribute = name.rpartition(".")
    if not module or not attribute or ":" in attribute:
        return None
    if not attribute.isidentifier() or not all(p.isidentifier() for p in module.split(".")):
        return None
    return module, attribute


def canonical_name(name: str) -> str | None:
    """One spelling per grader (for ES210): colon form, endstate alias mapped to the harness."""
    parts = split_name(name)
    if parts is None:
        return None
    module, attribute = parts
    if module in (_reference_module(), _this_module()) and attribute in _builtin_table():
        return f"{_this_module()}:{attribute}"
    return f"{module}:{attribute}"


# ----- built-ins ------------------------------------------------------------------------------


@lru_cache(maxsize=1)
def _harness() -> Any:
    """The harness's grader library (our own code; importing it runs no suite code)."""
    from endstate_harness import graders

    return graders


def _reference_module() -> str:
    return str(_harness().REFERENCE_MODULE)


def _this_module() -> str:
    return str(_harness().THIS_MODULE)


def _builtin_table() -> dict[str, Callable[..., Any]]:
    return dict(_harness().BUILTIN_GRADERS)


def _reference_table() -> dict[str, Callable[..., Any]]:
    return dict(_harness().REFERENCE_GRADERS)


def _param_from_inspect(p: inspect.Parameter) -> ParamInfo:
    kinds: dict[Any, ParamKind] = {
        p.POSITIONAL_ONLY: "positional",
        p.POSITIONAL_OR_KEYWORD: "positional",
        p.VAR_POSITIONAL: "var_positional",
        p.KEYWORD_ONLY: "keyword",
        p.VAR_KEYWORD: "var_keyword",
    }
    annotation: str | None = None
    if p.annotation is not p.empty:
        annotation = (
            p.annotation
            if isinstance(p.annotation, str)
            else inspect.formatannotation(p.annotation)
        )
    default = None if p.default is p.empty else repr(p.default)
    is_var = p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    return ParamInfo(
        name=p.name,
        kind=kinds[p.kind],
        annotation=annotation,
        default=default,
        required=default is None and not is_var,
        positional_only=p.kind is p.POSITIONAL_ONLY,
    )


@lru_cache(maxsize=64)
def _builtin_info(short: str) -> GraderInfo | None:
    function = _builtin_table().get(short)
    if function is None:
        return None
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):
        return None
    file: Path | None = None
    line = 1
    try:
        source_file = inspect.getsourcefile(function)
        file = Path(source_file) if source_file else None
        line = inspect.getsourcelines(function)[1]
    except (OSError, TypeError):
        pass
    return GraderInfo(
        name=f"{_this_module()}:{short}",
        module=_this_module(),
        function=short,
        params=[_param_from_inspect(p) for p in signature.parameters.values()],
        doc=inspect.getdoc(function) or "",
        file=file,
        line=line,
        column=1,
        end_line=line,
        end_column=1,
        builtin=True,
    )


# ----- reading a module's source --------------------------------------------------------------


@dataclass(frozen=True)
class _Def:
    """A top-level ``def`` as parsed (what GraderInfo needs, minus the lookup name)."""

    function: str
    params: list[ParamInfo]
    doc: str
    line: int
    column: int
    end_line: int
    end_column: int


@dataclass
class ParsedModule:
    """What lint needs of one module file, read statically.

    ``defs`` are top-level functions (also inside top-level ``if``/``try``/``with``; the last
    definition of a name wins, as at run time); ``reexports`` map a name to the
    (module, name, level) of a ``from ... import``; ``opaque`` are other top-level names
    (classes, assignments, plain imports) whose signature cannot be read; ``star`` lists
    ``from m import *`` targets; ``dynamic`` is True when a module ``__getattr__`` makes any
    name possible.
    """

    path: Path
    error: str | None = None
    error_line: int | None = None
    defs: dict[str, _Def] = field(default_factory=dict)
    reexports: dict[str, tuple[str, str, int]] = field(default_factory=dict)
    opaque: set[str] = field(default_factory=set)
    star: list[tuple[str, int]] = field(default_factory=list)
    dynamic: bool = False

    @property
    def names(self) -> list[str]:
        return sorted({*self.defs, *self.reexports, *self.opaque})


_cache_lock = threading.Lock()
_module_cache: OrderedDict[str, tuple[int, int, ParsedModule]] = OrderedDict()
_MODULE_CACHE_SIZE = 512
PARSE_COUNT = [0]
"""How many module files have been parsed in this process (tests assert the cache works)."""


def _racy(mtime_ns: int) -> bool:
    """An mtime within the last two seconds may not change on a second edit in the same clock
    tick, so an entry that fresh is not cached (git's "racy clean" rule)."""
    return time.time_ns() - mtime_ns < 2_000_000_000


def parse_module(path: Path) -> ParsedModule:
    """The parsed module at ``path``, from the cache when its mtime and size are unchanged."""
    try:
        st = path.stat()
    except OSError as exc:
        return ParsedModule(path, error=f"cannot be read: {exc.strerror or exc}")
    key = str(path)
    with _cache_lock:
        hit = _module_cache.get(key)
        if hit is not None and hit[0] == st.st_mtime_ns and hit[1] == st.st_size:
            _module_cache.move_to_end(key)
            return hit[2]
    parsed = _parse_file(path, st.st_size)
    if _racy(st.st_mtime_ns):
        return parsed
    with _cache_lock:
        _module_cache[key] = (st.st_mtime_ns, st.st_size, parsed)
        while len(_module_cache) > _MODULE_CACHE_SIZE:
            _module_cache.popitem(last=False)
    return parsed


def _parse_file(path: Path, size: int) -> ParsedModule:
    if size > MAX_MODULE_BYTES:
        return ParsedModule(path, error=f"is {size} bytes, over the {MAX_MODULE_BYTES} read")
    try:
        data = path.read_bytes()
    except OSError as exc:
        return ParsedModule(path, error=f"cannot be read: {exc.strerror or exc}")
    PARSE_COUNT[0] += 1
    try:
        tree = ast.parse(data, filename=str(path))
    except SyntaxError as exc:
        return ParsedModule(
            path, error=f"has a syntax error at line {exc.lineno}: {exc.msg}",
            error_line=exc.lineno,
        )
    except (ValueError, RecursionError, MemoryError) as exc:
        return ParsedModule(path, error=f"cannot be parsed: {exc}")
    lines = data.split(b"\n")
    out = ParsedModule(path)
    try:
        _collect(tree.body, out, lines)
    except RecursionError:
        out.dynamic = True
    return out


def _collect(body: list[ast.stmt], out: ParsedModule, lines: list[bytes]) -> None:
    for stmt in body:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
            _forget(out, stmt.name)
            out.defs[stmt.name] = _def_of(stmt, lines)
            if stmt.name == "__getattr__":
                out.dynamic = True
        elif isinstance(stmt, ast.ClassDef):
            _forget(out, stmt.name)
            out.opaque.add(stmt.name)
        elif isinstance(stmt, ast.ImportFrom):
            for alias in stmt.names:
                if alias.name == "*":
                    out.star.append((stmt.module or "", stmt.level))
                    continue
                local = alias.asname or alias.name
                _forget(out, local)
                out.reexports[local] = (stmt.module or "", alias.name, stmt.level)
        elif isinstance(stmt, ast.Import):
            for alias in stmt.names:
                local = alias.asname or alias.name.split(".")[0]
                _forget(out, local)
                out.opaque.add(local)
        elif isinstance(stmt, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            for target in targets:
                for node in ast.walk(target):
                    if isinstance(node, ast.Name):
                        _forget(out, node.id)
                        out.opaque.add(node.id)
        elif isinstance(stmt, ast.If | ast.For | ast.While | ast.With | ast.AsyncWith):
            _collect(stmt.body, out, lines)
            _collect(getattr(stmt, "orelse", []), out, lines)
        elif isinstance(stmt, ast.Try | ast.TryStar):
            _collect(stmt.body, out, lines)
            for handler in stmt.handlers:
                _collect(handler.body, out, lines)
            _collect(stmt.orelse, out, lines)
            _collect(stmt.finalbody, out, lines)


def _forget(out: ParsedModule, name: str) -> None:
    out.defs.pop(name, None)
    out.reexports.pop(name, None)
    out.opaque.discard(name)


def _text(node: ast.expr | None) -> str | None:
    if node is None:
        return None
    try:
        return ast.unparse(node)
    except Exception:  # unparse of odd trees; the text is only for display
        return None


def _def_of(node: ast.FunctionDef | ast.AsyncFunctionDef, lines: list[bytes]) -> _Def:
    a = node.args
    params: list[ParamInfo] = []
    positional = [*a.posonlyargs, *a.args]
    first_default = len(positional) - len(a.defaults)
    for i, arg in enumerate(positional):
        default = _text(a.defaults[i - first_default]) if i >= first_default else None
        params.append(ParamInfo(arg.arg, "positional", _text(arg.annotation), default,
                                default is None, positional_only=i < len(a.posonlyargs)))
    if a.vararg is not None:
        params.append(ParamInfo(a.vararg.arg, "var_positional", _text(a.vararg.annotation)))
    for arg, kw_default in zip(a.kwonlyargs, a.kw_defaults, strict=True):
        default = _text(kw_default) if kw_default is not None else None
        params.append(ParamInfo(arg.arg, "keyword", _text(arg.annotation), default,
                                default is None))
    if a.kwarg is not None:
        params.append(ParamInfo(a.kwarg.arg, "var_keyword", _text(a.kwarg.annotation)))
    line = node.lineno
    raw = lines[line - 1] if 0 < line <= len(lines) else b""
    column = len(raw[: node.col_offset].decode("utf-8", errors="replace")) + 1
    text = raw.decode("utf-8", errors="replace")
    at = text.find(node.name, column - 1)
    end_column = at + len(node.name) + 1 if at >= 0 else len(text.rstrip()) + 1
    return _Def(node.name, params, ast.get_docstring(node) or "", line, column, line, end_column)


# ----- finding a module's file the way the path-based import does ----------------------------


@dataclass(frozen=True)
class _Location:
    """A folder searched for the next dotted part, with the root it must stay inside."""

    folder: Path
    root: Path | None


@dataclass(frozen=True)
class _Found:
    """A module located: its source file (None for a namespace package or compiled module)."""

    file: Path | None
    package: tuple[_Location, ...]
    compiled: bool = False


_listing_cache: OrderedDict[str, tuple[int, dict[str, bool]]] = OrderedDict()


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
    with _cache_lock:
        hit = _listing_cache.get(key)
        if hit is not None and hit[0] == mtime:
            return hit[1]
    out = _scan(folder)
    if _racy(mtime):
        return out
    with _cache_lock:
        _listing_cache[key] = (mtime, out)
        while len(_listing_cache) > _MODULE_CACHE_SIZE:
            _listing_cache.popitem(last=False)
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


def _inside(path: Path, root: Path | None) -> bool:
    """Whether ``path``, links followed, stays inside ``root`` (already resolved)."""
    if root is None:
        return True
    try:
        return path.resolve().is_relative_to(root)
    except (OSError, RuntimeError):
        return False


def _find_in(
    locations: Sequence[_Location], parts: Sequence[str], notes: list[str]
) -> _Found | None:
    """Mimic importlib's FileFinder over ``locations`` for the dotted ``parts``.

    Per folder: a package dir with ``__init__.py`` wins, then ``part.py`` (or a compiled
    extension), else a plain dir is remembered as a namespace portion and the search goes
    on; portions are used only when nothing else is found. A candidate that is a symlink
    leading outside its search root is skipped and noted, never followed.
    """
    current = list(locations)
    found: _Found | None = None
    for depth, part in enumerate(parts):
        found = None
        portions: list[_Location] = []
        for loc in current:
            entries = _listing(loc.folder)
            if not entries:
                continue
            pkg = loc.folder / part
            if entries.get(part) is True:
                init = pkg / "__init__.py"
                if init.is_file():
                    if _inside(init, loc.root):
                        found = _Found(init, (_Location(pkg, loc.root),))
                        break
                    notes.append(f"{init} leads outside {loc.root} and is not followed")
                    continue
            module_file = loc.folder / f"{part}.py"
            if entries.get(f"{part}.py") is False:
                if _inside(module_file, loc.root):
                    found = _Found(module_file, ())
                    break
                notes.append(f"{module_file} leads outside {loc.root} and is not followed")
                continue
            compiled = [f"{part}{s}" for s in importlib.machinery.EXTENSION_SUFFIXES]
            if any(entries.get(c) is False for c in compiled):
                found = _Found(None, (), compiled=True)
                break
            if entries.get(part) is True:
                if _inside(pkg, loc.root):
                    portions.append(_Location(pkg, loc.root))
                else:
                    notes.append(f"{pkg} leads outside {loc.root} and is not followed")
        if found is None and portions:
            found = _Found(None, tuple(portions))
        if found is None:
            return None
        if depth + 1 < len(parts):
            if not found.package:
                return None  # a module, not a package: ``a.b`` cannot be below it
            current = list(found.package)
    return found


_env_lock = threading.Lock()


def _find_installed(parts: Sequence[str], notes: list[str]) -> _Found | None:
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
            return _Found(Path(origin), tuple(_Location(Path(p), None) for p in locations))
        return _Found(None, tuple(_Location(Path(p), None) for p in locations),
                      compiled=not locations)
    if not locations:
        if origin and origin.endswith(".py"):
            notes.append(f"{top!r} is installed as a module ({origin}), not a package")
            return None
        # frozen or built-in (``os.path``): lint cannot look inside, so it does not accuse
        return _Found(None, (), compiled=True)
    return _find_in([_Location(Path(p), None) for p in locations], parts[1:], notes)


# ----- the catalogue --------------------------------------------------------------------------


class Catalogue:
    """The graders one task can name: built-ins plus the suite's own modules."""

    def __init__(self, roots: Sequence[Path], *, use_installed: bool = True) -> None:
        self.roots = list(dict.fromkeys(_resolved(r) for r in roots))
        self.use_installed = use_installed
        self._memo: dict[str, Resolution] = {}
        self._all: list[GraderInfo] | None = None

    @classmethod
    def for_task(cls, task_root: Path, suite_root: Path, config: Config) -> Catalogue:
        """The catalogue of one task, searching the folders of task-format.md §7 in order."""
        from endstate_harness.graders import grader_search_paths

        roots = grader_search_paths(
            task_root, suite_root=suite_root, grader_paths=list(config.grader_paths)
        )
        return cls([r for r in roots if r.is_dir()])

    def is_suite_file(self, path: Path) -> bool:
        """Whether ``path`` lies in one of the searched folders (the suite's own code, where a
        finding at a ``def`` belongs; an installed package's file is not the author's)."""
        return any(_inside(path, root) for root in self.roots)

    # -- look-ups --

    def resolve(self, name: str) -> GraderInfo | None:
        """The grader ``name`` points at, or None when it cannot be found (see ``lookup``)."""
        return self.lookup(name).info

    def lookup(self, name: str) -> Resolution:
        """The grader ``name`` points at, or a precise reason why it cannot be found."""
        if name not in self._memo:
            self._memo[name] = self._lookup(name, depth=0)
        return self._memo[name]

    def _lookup(self, name: str, depth: int) -> Resolution:
        parts = split_name(name)
        if parts is None:
            return Resolution(kind="bad-name", error="not a module:function path",
                              suggestions=tuple(self._bare_suggestions(name)))
        module, function = parts
        full = f"{module}:{function}"
        if module in (_reference_module(), _this_module()):
            return self._lookup_builtin(full, module, function)
        notes: list[str] = []
        dotted = module.split(".")
        locations = [_Location(r, r) for r in self.roots]
        found = _find_in(locations, dotted, notes)
        from_installed = False
        if found is None and self.use_installed:
            found = _find_installed(dotted, notes)
            from_installed = found is not None
        if found is None:
            where = ", ".join(str(r) for r in self.roots)
            if self.use_installed:
                where = f"{where} or the installed packages" if where else "the installed packages"
            where = where or "no folder"
            extra = "; " + "; ".join(notes) if notes else ""
            return Resolution(
                kind="no-module",
                error=f"module {module!r} not found in {where}{extra}",
                suggestions=tuple(self._module_suggestions(module, function)),
                searched=tuple(self.roots),
            )
        if found.file is None:
            if found.compiled or (from_installed and not found.package):
                return Resolution(info=self._opaque(full, module, function, None))
            # a namespace package: there is no module body, so no function
            return Resolution(
                kind="no-function",
                error=f"{module!r} is a folder without __init__.py (a namespace package), "
                f"which defines no function {function!r}",
                searched=tuple(self.roots),
            )
        return self._in_module(full, module, function, found, depth)

    def _in_module(
        self, full: str, module: str, function: str, found: _Found, depth: int
    ) -> Resolution:
        assert found.file is not None
        parsed = parse_module(found.file)
        if parsed.error is not None:
            kind: ErrorKind = "syntax-error" if parsed.error_line else "unreadable"
            return Resolution(kind=kind, error=f"module {found.file} {parsed.error}",
                              file=found.file, line=parsed.error_line)
        if function in parsed.defs:
            d = parsed.defs[function]
            return Resolution(info=GraderInfo(
                name=full, module=module, function=function, params=d.params, doc=d.doc,
                file=found.file, line=d.line, column=d.column, end_line=d.end_line,
                end_column=d.end_column, builtin=False,
            ))
        if function in parsed.reexports and depth < 8:
            source, attr, level = parsed.reexports[function]
            target = _absolute(module, found.file, source, level)
            if target is not None:
                inner = self._lookup(f"{target}:{attr}", depth + 1)
                if inner.info is not None:
                    return Resolution(info=replace(inner.info, name=full, module=module,
                                                   function=function))
            # an import lint cannot see through may still work at run time: do not accuse
            return Resolution(info=self._opaque(full, module, function, found.file))
        if function in parsed.opaque or function in parsed.reexports or parsed.dynamic:
            return Resolution(info=self._opaque(full, module, function, found.file))
        for source, level in parsed.star:
            target = _absolute(module, found.file, source, level)
            if target is None or depth >= 8:
                return Resolution(info=self._opaque(full, module, function, found.file))
            inner = self._lookup(f"{target}:{function}", depth + 1)
            if inner.info is not None:
                return Resolution(info=replace(inner.info, name=full, module=module))
            # a star import we cannot see through may still provide it: do not accuse
            return Resolution(info=self._opaque(full, module, function, found.file))
        names = [n for n in parsed.names if not n.startswith("_")]
        hint = _hint(function, names)
        suggestions = [f"{module}:{n}" for n in closest(function, names)]
        return Resolution(
            kind="no-function",
            error=f"module found at {found.file} but has no function {function!r}{hint}",
            suggestions=tuple(suggestions),
            searched=tuple(self.roots),
            file=found.file,
        )

    def _lookup_builtin(self, full: str, module: str, function: str) -> Resolution:
        reference = module == _reference_module()
        table = _reference_table() if reference else _builtin_table()
        if function in table:
            info = _builtin_info(function)
            if info is not None:
                return Resolution(info=replace(info, name=full, module=module))
        if reference and function in _builtin_table():
            better = f"{_this_module()}:{function}"
            return Resolution(
                kind="no-function",
                error=f"{function!r} is a grader of this project, not of {module} (endstate "
                f"0.3.0 has no such grader, so the task breaks wherever endstate is installed); "
                f"name it {better}",
                suggestions=(better,),
            )
        names = sorted(table)
        suggestions = [f"{module}:{n}" for n in closest(function, names)]
        if not suggestions and reference:
            suggestions = [f"{_this_module()}:{n}" for n in closest(function, _builtin_table())]
        hint = _hint(function, [s.split(":")[1] for s in suggestions])
        listing = "" if hint else f" (it has: {', '.join(names)})"
        return Resolution(
            kind="no-function",
            error=f"{module} has no grader {function!r}{hint or listing}",
            suggestions=tuple(suggestions),
        )

    def _opaque(self, full: str, module: str, function: str, file: Path | None) -> GraderInfo:
        return GraderInfo(
            name=full, module=module, function=function, params=[], doc="", file=file,
            line=1, column=1, end_line=1, end_column=1, builtin=False, signature_known=False,
        )

    def _bare_suggestions(self, name: str) -> list[str]:
        """For a name that is not ``module:function``, the built-in it probably means."""
        word = name.strip().rsplit(":", 1)[-1].rsplit(".", 1)[-1]
        if not word:
            return []
        full = split_name(name.strip())
        if full is not None and name.strip() != name:
            return [name.strip()]
        out = [f"{_reference_module()}:{n}" for n in closest(word, _reference_table())]
        out += [f"{_this_module()}:{n}" for n in closest(word, _builtin_table())
                if n not in _reference_table()]
        return out

    def _module_suggestions(self, module: str, function: str) -> list[str]:
        """For a module typo such as ``endstate.eval.graders``, the built-in full names."""
        modules = [_reference_module(), _this_module()]
        out: list[str] = []
        for near in closest(module, modules):
            table = _reference_table() if near == _reference_module() else _builtin_table()
            if function in table:
                out.append(f"{near}:{function}")
            else:
                out += [f"{near}:{n}" for n in closest(function, table)]
        return out

    # -- completion --

    def all_graders(self, *, max_files: int = 2000) -> list[GraderInfo]:
        """Every grader a task could name: the built-ins, then every function of the suite's
        modules whose first parameter is ``sandbox`` (task content and environments are not
        scanned). Built-ins of endstate's library are listed under ``endstate.evals.graders``
        (the portable spelling), this project's own under ``endstate_harness.graders``."""
        if self._all is not None:
            return list(self._all)
        out: list[GraderInfo] = []
        reference = _reference_table()
        for short in sorted(_builtin_table()):
            info = _builtin_info(short)
            if info is None:
                continue
            module = _reference_module() if short in reference else _this_module()
            out.append(replace(info, name=f"{module}:{short}", module=module))
        seen = {i.name for i in out}
        budget = [max_files]
        for root in self.roots:
            for module, path in _modules_below(root, budget):
                try:
                    head = path.read_bytes()[:MAX_MODULE_BYTES]
                except OSError:
                    continue
                if b"sandbox" not in head:
                    continue
                parsed = parse_module(path)
                for name, d in sorted(parsed.defs.items()):
                    if name.startswith("_") or not d.params or d.params[0].name != "sandbox":
                        continue
                    full = f"{module}:{name}"
                    if full in seen:
                        continue
                    seen.add(full)
                    out.append(GraderInfo(
                        name=full, module=module, function=name, params=d.params, doc=d.doc,
                        file=path, line=d.line, column=d.column, end_line=d.end_line,
                        end_column=d.end_column, builtin=False,
                    ))
        self._all = out
        return list(out)


def _resolved(path: Path) -> Path:
    try:
        return path.resolve()
    except (OSError, RuntimeError):
        return path.absolute()


def _hint(word: str, options: Iterable[str]) -> str:
    found = closest(word, options)
    if not found:
        return ""
    return " (did you mean " + " or ".join(repr(f) for f in found[:3]) + "?)"


def _absolute(module: str, file: Path, source: str, level: int) -> str | None:
    """The absolute module a ``from <level dots><source> import`` in ``module`` refers to."""
    if level == 0:
        return source or None
    package = module.split(".") if file.name == "__init__.py" else module.split(".")[:-1]
    if level - 1 > len(package):
        return None
    base = package[: len(package) - (level - 1)]
    parts = [*base, *([source] if source else [])]
    return ".".join(parts) if parts else None


def _modules_below(root: Path, budget: list[int], max_depth: int = 4) -> Iterable[tuple[str, Path]]:
    """(dotted name, file) of the Python modules below ``root`` that could be imported from it."""
    stack: list[tuple[Path, tuple[str, ...]]] = [(root, ())]
    from endstate_harness.task import PRUNED_NAMES

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


def clear_cache() -> None:
    """Forget every parsed module (tests; the editor after a bulk change)."""
    with _cache_lock:
        _module_cache.clear()
        _listing_cache.clear()
