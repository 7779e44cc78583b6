"""Prove's side of the sandbox: warm interpreters started before the first check needs them.

Which sandbox prove uses is the one choice every command makes
(:mod:`endstate_harness.sandbox.choice`); prove asks for its ``grading`` variant.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

import endstate_author.prove.variation as variation
from endstate_author.engine.discovery.grader_names import judged_pythons
from endstate_harness.graders.judge import prestart as judge_prestart
from endstate_harness.sandbox.choice import SandboxChoice

if TYPE_CHECKING:
    from endstate_harness.task import Task


def prestart(choice: SandboxChoice, task: Task, second: bool = True) -> list[threading.Thread]:
    """Start, in the background, the warm interpreters the task's ``judged_tests`` gradings
    will fork from (the judge on the host, its child in the local sandbox), so their start
    overlaps loading, linting and planning instead of delaying the first checks
    (:mod:`endstate_harness.graders.judge.prestart`; ``endstate-author prove`` began them
    already, before its imports: :mod:`endstate_author.cli.prove_early`). None for Docker.
    ``second``: also those of the solution's second grading, under another hash seed
    (:func:`endstate_author.prove.variation.other`), when that check will run."""
    return prestart_seeds(choice, task, [choice, variation.other(choice, 0)] if second
                          else [choice])


def prestart_seeds(choice: SandboxChoice, task: Task,
                   specs: list[SandboxChoice]) -> list[threading.Thread]:
    """:func:`prestart` for the hash seeds of ``specs`` (a warm interpreter serves one seed:
    the solution's second grading, each ``--repeat`` pass, has its own)."""
    if choice.kind != "local":
        return []
    return judge_prestart.prestart(judged_pythons((g.name, g.args) for g in task.graders),
                                   [str(spec.hash_seed) for spec in specs])
