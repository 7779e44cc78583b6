"""Graders: how a task's grader names become callables, and the full grader catalogue.

A grader is ``f(sandbox, **args) -> Verdict``. It is handed the sandbox and nothing else, so it
can judge only what the agent *left*, never what the agent *said*; :func:`resolve` enforces that
shape when a name from task.json is turned into a callable (task-format.md §3).

This module is the public face of the graders: every grader a task can name under
``endstate_harness.graders:<x>`` is importable from here, and so are resolution
(:func:`resolve`, :func:`grade`, in :mod:`~endstate_harness.graders.resolver`) and the run-level
:func:`requirements_checks`. Importing it loads only the table (:mod:`.names`) and the search
paths (:mod:`.search`): a grader, the resolver and the task model are imported on first use of
their name, so lint, which reads the graders' source, never pays for them. The graders
themselves live in their own rooms:

* the reference library of §3 in :mod:`endstate_harness.graders.reference` (``command_succeeds`` …
  ``changed_paths_within``), which ``endstate.evals.graders:<x>`` resolves to;
* the in-process hardened unittest grader :func:`tests_pass` in
  :mod:`endstate_harness.graders.unittest_grader` (a courtesy for the visible tests);
* the out-of-process judge :func:`judged_tests` in :mod:`endstate_harness.graders.judge`, which
never
  shares a process with the code it judges.
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
