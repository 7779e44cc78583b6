"""The graders a task can name, as completion, hover and go-to-definition need them."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from endstate_author.engine.catalogue import Catalogue
from endstate_author.engine.config import Config

REFERENCE_MODULE = "endstate.evals.graders"
HARNESS_MODULE = "endstate_harness.graders"


@dataclass(frozen=True)
class ParamView:
    name: str
    annotation: str
    default: str | None
    required: bool


@dataclass(frozen=True)
class GraderView:
    """What the editor needs to know about one grader, from the static catalogue."""

    name: str
    params: tuple[ParamView, ...]
    doc: str
    file: Path | None
    line: int
    column: int

    @property
    def signature(self) -> str:
        parts = ["sandbox"]
        if self.params:
            parts.append("*")
        for p in self.params:
            text = f"{p.name}: {p.annotation}" if p.annotation else p.name
            if p.default is not None:
                text += f" = {p.default}"
            parts.append(text)
        func = self.name.split(":")[-1]
        return f"def {func}({', '.join(parts)}) -> Verdict"

    @property
    def required(self) -> list[ParamView]:
        return [p for p in self.params if p.required]


def _view(info: Any, name: str) -> GraderView:
    params = []
    for p in getattr(info, "params", []) or []:
        pname = str(getattr(p, "name", ""))
        if pname == "sandbox" or str(getattr(p, "kind", "")).upper().startswith("VAR_"):
            continue
        default = getattr(p, "default", None)
        params.append(
            ParamView(
                name=pname,
                annotation=str(getattr(p, "annotation", "") or ""),
                default=None if default is None else str(default),
                required=bool(getattr(p, "required", False)),
            )
        )
    file = getattr(info, "file", None)
    return GraderView(
        name=name,
        params=tuple(params),
        doc=str(getattr(info, "doc", "") or ""),
        file=Path(file) if file else None,
        line=int(getattr(info, "line", 1) or 1),
        column=int(getattr(info, "column", 1) or 1),
    )


class Graders:
    """The graders a task can name, looked up statically (never imported)."""

    def __init__(self, catalogue: Any | None) -> None:
        self.catalogue = catalogue

    @classmethod
    def for_task(
        cls, root: Path, suite_root: Path | None = None, config: Config | None = None
    ) -> Graders:
        try:
            cat = Catalogue.for_task(root, suite_root or root.parent, config or Config())
        except Exception:
            cat = None
        return cls(cat)

    def resolve(self, name: str) -> GraderView | None:
        if self.catalogue is None or not name:
            return None
        try:
            info = self.catalogue.resolve(name)
        except Exception:
            return None
        return _view(info, name) if info is not None else None

    def all(self) -> list[GraderView]:
        if self.catalogue is None:
            return []
        try:
            infos = list(self.catalogue.all_graders())
        except Exception:
            return []
        out = []
        for info in infos:
            name = str(getattr(info, "name", "") or "")
            if not name:
                module = getattr(info, "module", "")
                name = f"{module}:{getattr(info, 'function', '')}"
            out.append(_view(info, name))
        return out


def short_name(name: str) -> str:
    """``module:function`` → ``function`` (also for the last-dot form)."""
    if ":" in name:
        return name.rsplit(":", 1)[1]
    return name.rsplit(".", 1)[-1]
