"""The built-in graders' signatures, read statically by the catalogue (lint imports no grader),
are exactly what :func:`inspect.signature` says of the functions the harness runs."""

from __future__ import annotations

import inspect
from typing import Any

import pytest

from endstate_author.engine.catalogue.library import builtin_info
from endstate_author.engine.catalogue.model import ParamInfo
from endstate_harness.graders import BUILTIN_GRADERS, LIBRARY
from endstate_harness.graders.names import GRADERS

_KINDS: dict[Any, str] = {
    inspect.Parameter.POSITIONAL_ONLY: "positional",
    inspect.Parameter.POSITIONAL_OR_KEYWORD: "positional",
    inspect.Parameter.VAR_POSITIONAL: "var_positional",
    inspect.Parameter.KEYWORD_ONLY: "keyword",
    inspect.Parameter.VAR_KEYWORD: "var_keyword",
}


def _from_inspect(p: inspect.Parameter) -> ParamInfo:
    annotation = None
    if p.annotation is not p.empty:
        annotation = (p.annotation if isinstance(p.annotation, str)
                      else inspect.formatannotation(p.annotation))
    default = None if p.default is p.empty else repr(p.default)
    is_var = p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    return ParamInfo(p.name, _KINDS[p.kind], annotation, default,  # type: ignore[arg-type]
                     default is None and not is_var, p.kind is p.POSITIONAL_ONLY)


def test_the_resolver_offers_every_record_and_nothing_else() -> None:
    """The resolver's table is built from the records: each name is the function its record's
    module defines, so lint (which reads the records) and the resolver cannot disagree."""
    assert list(BUILTIN_GRADERS) == [record.name for record in GRADERS]
    for record in GRADERS:
        assert BUILTIN_GRADERS[record.name] is record.load()
        assert BUILTIN_GRADERS[record.name].__module__ == LIBRARY[record.name]


@pytest.mark.parametrize("short", sorted(LIBRARY))
def test_static_signature_is_the_runtime_one(short: str) -> None:
    function = BUILTIN_GRADERS[short]
    info = builtin_info(short)
    assert info is not None
    # eval_str: a grader module may use ``from __future__ import annotations``
    parameters = inspect.signature(function, eval_str=True).parameters.values()
    runtime = [_from_inspect(p) for p in parameters]
    # a class is shown as written in the source (``Sandbox``), not by its qualified name
    assert runtime[0].annotation == "endstate_harness.sandbox.base.Sandbox"
    assert info.params[0].annotation == "Sandbox"
    assert info.params[1:] == runtime[1:] and info.params[0].name == runtime[0].name
    assert info.doc == (inspect.getdoc(function) or "")
    assert info.line == inspect.getsourcelines(function)[1]
    assert info.file is not None and info.file.samefile(inspect.getsourcefile(function) or "")
