"""Built-in graders: their signatures read with :func:`inspect.signature` off the harness's
own functions (``endstate.evals.graders:<x>`` is aliased to the same library; the
``endstate`` package itself is never imported, installed or not)."""

from __future__ import annotations

import inspect
from functools import lru_cache
from pathlib import Path
from typing import Any

from endstate_author.catalogue.model import GraderInfo, ParamInfo, ParamKind
from endstate_author.catalogue.names import builtin_table, this_module


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
def builtin_info(short: str) -> GraderInfo | None:
    function = builtin_table().get(short)
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
        name=f"{this_module()}:{short}",
        module=this_module(),
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
