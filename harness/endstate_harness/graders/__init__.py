"""Graders: how a task's grader names become callables, and the full grader catalogue.

Every grader a task names as ``endstate_harness.graders:<x>`` is importable from here, lazily:
importing the package loads only the register (``names``: one record per grader) and the search
paths; a grader's module and the ``resolver`` load on first use. The graders' names here, in
``__all__`` and for ``__getattr__``, are the records' (a new grader is listed by its record).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from endstate_harness.graders.names import (
    FORBIDDEN_PARAMETERS,
    LIBRARY,
    REFERENCE_MODULE,
    REFERENCE_NAMES,
    THIS_MODULE,
    VENDORED_MODULES,
)
from endstate_harness.graders.search import grader_search_paths, project_root

if TYPE_CHECKING:  # what __getattr__ hands out, for type checkers (a grader is Any to them)
    from endstate_harness.errors import GraderContractError
    from endstate_harness.graders.reference import (
        READS_SEALED_STATE_ONLY,
        REFERENCE_GRADERS,
        SKIP_MARKERS,
    )
    from endstate_harness.graders.resolver import (
        BUILTIN_GRADERS,
        Grader,
        as_verdict,
        check_contract,
        grade,
        import_grader_module,
        reads_sealed_state_only,
        requirements_checks,
        resolve,
        split_name,
    )
    from endstate_harness.layout import COUNTERS

_LAZY = {
    **LIBRARY,
    "READS_SEALED_STATE_ONLY": "endstate_harness.graders.reference",
    "REFERENCE_GRADERS": "endstate_harness.graders.reference",
    "SKIP_MARKERS": "endstate_harness.graders.reference",
    "GraderContractError": "endstate_harness.errors",
    "COUNTERS": "endstate_harness.layout",
    **{name: "endstate_harness.graders.resolver" for name in (
        "BUILTIN_GRADERS", "Grader", "as_verdict", "check_contract", "grade",
        "import_grader_module", "reads_sealed_state_only", "requirements_checks", "resolve",
        "split_name",
    )},
}  # fmt: skip


def __getattr__(name: str) -> Any:
    """A grader or the resolver, imported the first time its name is asked for."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "BUILTIN_GRADERS",
    "COUNTERS",
    "FORBIDDEN_PARAMETERS",
    "LIBRARY",
    "READS_SEALED_STATE_ONLY",
    "REFERENCE_GRADERS",
    "REFERENCE_MODULE",
    "REFERENCE_NAMES",
    "SKIP_MARKERS",
    "THIS_MODULE",
    "VENDORED_MODULES",
    "Grader",
    "GraderContractError",
    "as_verdict",
    "check_contract",
    "grade",
    "grader_search_paths",
    "import_grader_module",
    "project_root",
    "reads_sealed_state_only",
    "requirements_checks",
    "resolve",
    "split_name",
    *LIBRARY,  # every grader, by its record
]
