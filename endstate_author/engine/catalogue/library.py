"""Built-in graders: their signatures read statically from the harness's own source files,
as a suite's grader modules are (:mod:`~endstate_author.engine.catalogue.source`), so lint
imports no grader (a differential test holds the result to :func:`inspect.signature` of the
functions).
``endstate.evals.graders:<x>`` is aliased to the same library; the ``endstate`` package itself
is never imported, installed or not."""

from __future__ import annotations

import importlib.util
from functools import lru_cache
from pathlib import Path

from endstate_author.engine.catalogue.model import GraderInfo
from endstate_author.engine.catalogue.names import builtin_table, this_module
from endstate_author.engine.catalogue.source import parse_module


@lru_cache(maxsize=64)
def builtin_info(short: str) -> GraderInfo | None:
    module = builtin_table().get(short)
    if module is None:
        return None
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        return None
    path = Path(spec.origin)
    parsed = parse_module(path)
    found = parsed.defs.get(short)
    if found is None:
        return None
    return GraderInfo(
        name=f"{this_module()}:{short}",
        module=this_module(),
        function=short,
        params=list(found.params),
        doc=found.doc,
        file=path,
        line=found.line,
        column=1,
        end_line=found.line,
        end_column=1,
        builtin=True,
    )
