"""What a look-up answers: a grader's parameters and place (:class:`GraderInfo`), or why it
cannot be found (:class:`Resolution`).

Plain data shared by every part of the catalogue and by the rules, hover and completion that
read it; nothing here reads files.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from endstate_author.engine.catalogue.names import this_module

ParamKind = Literal["positional", "keyword", "var_keyword", "var_positional"]


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
            return f"{this_module()}:{self.function}"
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


@dataclass(frozen=True)
class ParsedDef:
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
    defs: dict[str, ParsedDef] = field(default_factory=dict)
    reexports: dict[str, tuple[str, str, int]] = field(default_factory=dict)
    opaque: set[str] = field(default_factory=set)
    star: list[tuple[str, int]] = field(default_factory=list)
    dynamic: bool = False

    @property
    def names(self) -> list[str]:
        return sorted({*self.defs, *self.reexports, *self.opaque})
