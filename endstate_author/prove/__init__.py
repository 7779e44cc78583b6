"""prove: the discrimination checks that make a task trustworthy (codes ES901–ES915).

Re-exports what callers use; the checks are described in docs/guide/prove.md, the package's
modules in docs/architecture.md.
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
