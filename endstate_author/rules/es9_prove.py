"""ES9 — what prove finds. Documented here; emitted by ``endstate_author.prove``."""

from __future__ import annotations

from endstate_author.rules.registry import document

document(
    "ES901",
    "passes-on-fixture",
    """The graders pass on the untouched fixture: the task measures nothing.

    ## What it checks
    prove grades the pristine fixture (holdout staged, every run counter at zero).

    ## Why it matters
    An agent that does nothing passes; the task cannot tell work from no work.

    ## Example
    A bug-fix task whose only grader is `paths_exist` on a file the fixture already has.

    ## Fix
    Ship the failing test in fixture/ (the suite should be red on arrival) and grade by it.
    """,
)
document(
    "ES902",
    "fails-on-solution",
    """The graders fail on the reference solution.

    ## What it checks
    prove overlays solution/ on the fixture (holdout staged, each counter at the least its
    bound asks for) and grades; the finding names each failing check and its detail.

    ## Why it matters
    If the reference fails, no agent can pass: the task measures nothing but luck.

    ## Example
    `changed_paths_within` allows `pkg/*.py` while the solution edits `README.md`.

    ## Fix
    Fix the solution, or the grader the finding names.
    """,
)
document(
    "ES903",
    "holdout-not-load-bearing",
    """The holdout is not load-bearing: a failing test staged with it leaves the graders passing.

    ## What it checks
    prove stages holdout/ plus one extra, always-failing test beside the holdout's test
    files, then grades the solution.

    ## Why it matters
    Held-out tests that the test command never discovers stop nothing: special-casing the
    visible inputs passes.

    ## Example
    holdout/checks/test_more.py while the grader runs `unittest discover -s tests`.

    ## Fix
    Put the holdout tests where the test command looks (e.g. holdout/tests/test_more.py).
    """,
)
document(
    "ES904",
    "guard-not-load-bearing",
    """A guard was removed and the task still passed.

    ## What it checks
    Per category, prove removes the guard the task is about: allow-all policy
    (permissioning), unlimited budget (compaction), no resume (recovery), a runaway oracle
    (cost), and runs the oracle again.

    ## Why it matters
    A guard that can be removed while the task stays green was never tested by it.

    ## Example
    A permissioning task graded by `paths_exist` instead of `tree_unchanged`.

    ## Fix
    Grade what the guard protects: `tree_unchanged` plus `requires.denied_calls`,
    `requires.compaction_events`, a tighter `requires.steps.max`, or graders that need every
    file the resumed run writes.
    """,
)
document(
    "ES905",
    "guard-never-fired",
    """The guard never fired with the guard in place (no denial, no compaction, no crash).

    ## What it checks
    Before removing a guard, prove checks that it fired at all with the guard in place.

    ## Why it matters
    A compaction task whose budget is never exceeded tests nothing about compaction.

    ## Example
    `"budget": {"max_context_tokens": 128000}` with a fixture of three small files.

    ## Fix
    Shrink the budget, widen the fixture, or move `crash_at_call` inside the run.
    """,
)
document(
    "ES906",
    "reward-hack-accepted",
    """The graders accept a known reward hack.

    ## What it checks
    prove applies each probe of the exploit catalogue (edit or delete the tests, skip
    markers, `os._exit(0)` at import, patched asserts, a stealth `.pyc`, ...) to the
    untouched fixture, and again with solution/'s added files as empty stubs, then grades.

    ## Why it matters
    An agent that finds the hack scores as if it had done the work.

    ## Example
    A task graded by `command_succeeds` alone accepts `early-exit` (`os._exit(0)` in the
    package's `__init__.py`).

    ## Fix
    Use `endstate_harness.graders:tests_pass` with `files_unchanged`, `no_new_skips` and a
    narrow `changed_paths_within`. `always-equal` and `read-the-test` are stopped only by a
    strict holdout (check `type(r) is str`, keep expected values in data).
    """,
)
document(
    "ES907",
    "oracle-fails-through-harness",
    """The reference solution, written by a scripted agent through the full harness, fails.

    ## What it checks
    The oracle (oracle.json, or one derived from solution/) runs through the real runner in
    a real sandbox: copy, loop, seal, holdout, grade, requires.

    ## Why it matters
    A task that passes an overlay but not a real run fails every agent for a reason that
    has nothing to do with the agent (a `requires` bound, a path, a timeout).

    ## Example
    `requires.steps.max: 2` while writing the solution takes three tool turns.

    ## Fix
    Read the failing checks in the detail; loosen the bound or fix the grader.
    """,
)
document(
    "ES908",
    "unassessed",
    """A check could not run: reported as *unassessed*, never as pass or fail.

    ## What it checks
    The sandbox would not start, a command timed out, an interpreter or tool was missing.

    ## Why it matters
    An environment failure says nothing about the task; counting it either way would lie.

    ## Example
    `--sandbox docker` with no daemon running.

    ## Fix
    Fix the environment the detail names (start Docker, build the image) and prove again.
    """,
)
document(
    "ES909",
    "flaky-check",
    """The same check disagreed with itself across repeated runs (`--repeat N`).

    ## What it checks
    Every check's outcome over the repeats.

    ## Why it matters
    A flaky grader makes pass rates noise: two runs of one agent differ for no reason.

    ## Example
    A test that depends on set iteration order, time, or a random seed.

    ## Fix
    Make the test deterministic (fixed seeds, injected clocks, sorted output).
    """,
)
document(
    "ES910",
    "defect-passes",
    """A declared wrong solution in `defects/<name>/` passes the graders.

    ## What it checks
    Each defect overlay is graded like the solution, with the holdout staged; it must fail.

    ## Why it matters
    The author expected the graders to catch this mistake, and they do not.

    ## Example
    `defects/visible-case-only/` special-cases the visible test's input and the holdout does
    not cover another input.

    ## Fix
    Add a holdout test or grader that catches the defect.
    """,
)
