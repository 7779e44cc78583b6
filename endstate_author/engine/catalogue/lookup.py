"""The :class:`Catalogue`: what a grader name in task.json points at, or why it points nowhere."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from endstate_author.engine.catalogue.finder import (
    Found,
    Location,
    find_in,
    find_installed,
    inside,
    modules_below,
)
from endstate_author.engine.catalogue.library import builtin_info
from endstate_author.engine.catalogue.model import ErrorKind, GraderInfo, Resolution
from endstate_author.engine.catalogue.names import (
    builtin_table,
    reference_module,
    reference_table,
    split_name,
    this_module,
)
from endstate_author.engine.catalogue.source import MAX_MODULE_BYTES, absolute_module, parse_module
from endstate_author.engine.suggest import closest
from endstate_harness.graders import grader_search_paths

if TYPE_CHECKING:
    from endstate_author.engine.config import Config


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
        roots = grader_search_paths(
            task_root, suite_root=suite_root, grader_paths=list(config.grader_paths)
        )
        return cls([r for r in roots if r.is_dir()])

    def is_suite_file(self, path: Path) -> bool:
        """Whether ``path`` lies in one of the searched folders (the suite's own code, where a
        finding at a ``def`` belongs; an installed package's file is not the author's)."""
        return any(inside(path, root) for root in self.roots)

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
        if module in (reference_module(), this_module()):
            return self._lookup_builtin(full, module, function)
        notes: list[str] = []
        dotted = module.split(".")
        locations = [Location(r, r) for r in self.roots]
        found = find_in(locations, dotted, notes)
        from_installed = False
        if found is None and self.use_installed:
            found = find_installed(dotted, notes)
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
        self, full: str, module: str, function: str, found: Found, depth: int
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
            target = absolute_module(module, found.file, source, level)
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
            target = absolute_module(module, found.file, source, level)
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
        reference = module == reference_module()
        table = reference_table() if reference else builtin_table()
        if function in table:
            info = builtin_info(function)
            if info is not None:
                return Resolution(info=replace(info, name=full, module=module))
        if reference and function in builtin_table():
            better = f"{this_module()}:{function}"
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
            suggestions = [f"{this_module()}:{n}" for n in closest(function, builtin_table())]
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
        out = [f"{reference_module()}:{n}" for n in closest(word, reference_table())]
        out += [f"{this_module()}:{n}" for n in closest(word, builtin_table())
                if n not in reference_table()]
        return out

    def _module_suggestions(self, module: str, function: str) -> list[str]:
        """For a module typo such as ``endstate.eval.graders``, the built-in full names."""
        modules = [reference_module(), this_module()]
        out: list[str] = []
        for near in closest(module, modules):
            table = reference_table() if near == reference_module() else builtin_table()
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
        reference = reference_table()
        for short in sorted(builtin_table()):
            info = builtin_info(short)
            if info is None:
                continue
            module = reference_module() if short in reference else this_module()
            out.append(replace(info, name=f"{module}:{short}", module=module))
        seen = {i.name for i in out}
        budget = [max_files]
        for root in self.roots:
            for module, path in modules_below(root, budget):
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
