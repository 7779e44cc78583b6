"""Graders: how a task's grader names become callables, and the full grader catalogue.

Every grader a task names as ``endstate_harness.graders:<x>`` is importable from here, lazily:
importing the package loads only the table (``names``) and the search paths; the graders
(``reference``, ``unittest_grader``, ``judge``, ``structure``) and the ``resolver`` load on
first use.
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

if TYPE_CHECKING:  # what __getattr__ hands out, for type checkers
    from endstate_harness.errors import GraderContractError
    from endstate_harness.graders.judge.grader import judged_tests
    from endstate_harness.graders.reference import (
        READS_SEALED_STATE_ONLY,
        REFERENCE_GRADERS,
        SKIP_MARKERS,
        changed_paths_within,
        command_succeeds,
        file_contains,
        file_matches,
        files_unchanged,
        no_new_skips,
        paths_absent,
        paths_exist,
        pattern_count,
        tree_unchanged,
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
    from endstate_harness.graders.structure import delegates_to
    from endstate_harness.graders.unittest_grader import tests_pass
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
    "changed_paths_within",
    "check_contract",
    "command_succeeds",
    "delegates_to",
    "file_contains",
    "file_matches",
    "files_unchanged",
    "grade",
    "grader_search_paths",
    "import_grader_module",
    "judged_tests",
    "no_new_skips",
    "paths_absent",
    "paths_exist",
    "pattern_count",
    "project_root",
    "reads_sealed_state_only",
    "requirements_checks",
    "resolve",
    "split_name",
    "tests_pass",
    "tree_unchanged",
]
