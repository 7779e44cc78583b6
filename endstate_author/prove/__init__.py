"""prove: the discrimination checks that make a task trustworthy (codes ES901–ES915).

Static rules find what can be seen in the files; prove finds what only running shows. Per
task it answers, each as a *check* with an outcome (pass, fail, unassessed, skipped):

1. directions — the graders fail on the untouched fixture (every counter at zero; else
   ES901) and pass on the solution overlay (each counter at the least its bound asks for;
   else ES902). Permissioning tasks have no solution direction.
2. holdout — a failing sentinel appended to each holdout test module must make the
   solution fail, and the module's own tests must not all be skipped (ES903).
3. defects — each ``defects/<name>/`` overlay must fail (ES910).
4. oracle — a scripted agent writes the solution through the full runner (ES907).
5. guards — per category, shown to fire (else ES905) and then removed (else ES904).
6. probes — every reward hack of the catalogue on the fixture, and again with solution/'s
   added files as empty stubs when it adds any, must be rejected (ES906).
7. visible — the fixture's own tests, run alone on the untouched fixture, must fail
   (ES912, a warning; permissioning and refactor exempt).
8. witness — from the judge's per-test evidence: the holdout alone fails on the fixture
   (ES914) and every test executes an assertion on the solution (ES915).
9. mutants — generated wrong solutions (:mod:`~endstate_author.prove.mutation`: partial
   solutions and operator mutants where the solution differs from the fixture) must fail
   (ES911); the mutation score is reported per task.

A check that cannot run (no sandbox, a timeout, a missing interpreter) is *unassessed*
(ES908): never a pass, never a fail. Every check runs in its own sandbox, so checks of one
task run in parallel; the task folder itself is only ever read.

The package, one module per concern:

- :mod:`~endstate_author.prove.model` — the data types (results, proofs, options, jobs);
- :mod:`~endstate_author.prove.sandbox` — warm interpreters started before the checks;
- :mod:`~endstate_author.prove.grading` — grading an end state built without an agent;
- :mod:`~endstate_author.prove.harness` — running a scripted agent through the real runner;
- :mod:`~endstate_author.prove.checks` — one module per check group;
- :mod:`~endstate_author.prove.cache` — answering an unchanged task at once;
- :mod:`~endstate_author.prove.run` — planning, running, repeating and reporting.

This module re-exports what callers use, so ``from endstate_author.prove import ...`` keeps
working as it did when prove was one module.
"""

from endstate_author.prove.checks import CHECK_GROUPS
from endstate_author.prove.grading import (
    Graded,
    failing_detail,
    first_failing_grader,
    grade_end_state,
    least_counters,
    zero_counters,
)
from endstate_author.prove.model import (
    DEFAULT_MUTANT_BUDGET,
    DEFAULT_MUTANTS,
    Check,
    CheckResult,
    Job,
    Outcome,
    ProveContext,
    ProveOptions,
    TaskProof,
    Unassessed,
    make_job,
)
from endstate_author.prove.run import (
    default_jobs,
    load_for_prove,
    plan_jobs,
    prove_paths,
    prove_task,
    run_jobs,
    skipped_notes,
)

__all__ = [
    "CHECK_GROUPS",
    "DEFAULT_MUTANTS",
    "DEFAULT_MUTANT_BUDGET",
    "Check",
    "CheckResult",
    "Graded",
    "Job",
    "Outcome",
    "ProveContext",
    "ProveOptions",
    "TaskProof",
    "Unassessed",
    "default_jobs",
    "failing_detail",
    "first_failing_grader",
    "grade_end_state",
    "least_counters",
    "load_for_prove",
    "make_job",
    "plan_jobs",
    "prove_paths",
    "prove_task",
    "run_jobs",
    "skipped_notes",
    "zero_counters",
]
