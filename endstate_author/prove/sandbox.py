"""Prove's side of the sandbox: warm interpreters started before the first check needs them.

Which sandbox prove uses is the one choice every command makes
(:mod:`endstate_harness.sandbox.choice`); prove asks for its ``grading`` variant.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable

from endstate_author.discovery.grader_names import builtin_name
from endstate_harness.graders.judge.grader import child_command, judge_env
from endstate_harness.process import zygote
from endstate_harness.sandbox.choice import SandboxChoice
from endstate_harness.sandbox.local import prestart_channel
from endstate_harness.sandbox.scratch import grading_scratch_root
from endstate_harness.task import Task


def prestart(choice: SandboxChoice, task: Task) -> list[threading.Thread]:
    """Start, in the background, the warm interpreters the task's ``judged_tests`` gradings
    will fork from (the judge on the host, its child in the local sandbox), so their start
    overlaps loading, linting and planning instead of delaying the first checks. The same
    interpreters the first grading would start (same keys), only earlier; a check that needs
    one before it is up waits for it as it would have.

    Not daemon threads: an interrupted prove lets them finish before the exit handlers close
    every warm interpreter, so none outlives the run."""
    if choice.kind != "local":
        return []
    pythons = sorted({
        str(spec.args.get("python", "python3"))
        for spec in task.graders
        if builtin_name(spec.name) == "judged_tests"
    })
    starts: list[Callable[[], None]] = [
        functools.partial(prestart_channel, child_command(python),
                          scratch_root=grading_scratch_root())
        for python in pythons
    ]
    if starts:
        starts.append(prestart_judge)
    threads = [threading.Thread(target=_quietly, args=(start,), name="endstate-prestart")
               for start in starts]
    for thread in threads:
        thread.start()
    return threads


def prestart_judge() -> None:
    """Start the judge's warm interpreter now rather than at the first grading: the very key
    the judge grader asks for (module and environment), so it is the same zygote, only
    earlier. (Here, not in the judge grader, whose text is vendored into suites where there
    is no warm start.)"""
    zygote.zygote_for("endstate_harness.graders.judge.main", judge_env())


def _quietly(start: Callable[[], None]) -> None:
    try:
        start()
    except Exception:  # an early start that fails is left to the lazy start
        pass
