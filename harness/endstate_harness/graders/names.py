"""The grader library's table: every grader a task can name, and the module that defines it.

Read by the resolver, by lint's catalogue (which reads these modules' source with ``ast``
instead of importing them) and by the rules, without importing a single grader.
"""

from __future__ import annotations

THIS_MODULE = "endstate_harness.graders"
"""What a task names this library by: ``endstate_harness.graders:<name>``."""
REFERENCE_MODULE = "endstate.evals.graders"
"""endstate 0.3.0's reference library (task-format.md §3), aliased to ours."""

_REFERENCE = "endstate_harness.graders.reference"
LIBRARY: dict[str, str] = {
    "command_succeeds": _REFERENCE,
    "files_unchanged": _REFERENCE,
    "paths_exist": _REFERENCE,
    "paths_absent": _REFERENCE,
    "file_matches": _REFERENCE,
    "file_contains": _REFERENCE,
    "pattern_count": _REFERENCE,
    "no_new_skips": _REFERENCE,
    "tree_unchanged": _REFERENCE,
    "changed_paths_within": _REFERENCE,
    "tests_pass": "endstate_harness.graders.unittest_grader",
    "judged_tests": "endstate_harness.graders.judge.grader",
    "delegates_to": "endstate_harness.graders.structure",
}
"""Every grader of ``endstate_harness.graders``, by short name: the module that defines it."""
REFERENCE_NAMES = frozenset(n for n, module in LIBRARY.items() if module == _REFERENCE)
"""The graders ``endstate.evals.graders`` offers too (the rest are this toolkit's own)."""

VENDORED_MODULES = (
    "endstate_harness.graders.unittest_grader",
    "endstate_harness.graders.judge.evidence",
    "endstate_harness.graders.judge.launch",
    "endstate_harness.graders.judge.grader",
    "endstate_harness.graders.pysource",
    "endstate_harness.graders.codeshape",
    "endstate_harness.graders.structure",
)
"""The modules whose text ``endstate-author vendor`` copies, statement by statement, into a
suite that plain endstate 0.3.0 grades (``endstate_vendor/graders.py``). Each imports only the
standard library and the harness (those imports are replaced when vendored), and a change to
either reaches vendored suites the next time ``vendor`` runs; ES213 says when a copy is old."""

FORBIDDEN_PARAMETERS = frozenset(
    {
        "messages",
        "transcript",
        "history",
        "result",
        "run_result",
        "final_text",
        "response",
        "conversation",
    }
)
"""Parameter names through which a grader could be handed the agent's words (§3).

A guard against the accident — someone adding "and it said it ran the tests" because that is
easier than checking the tests ran — not against a determined author.
"""
