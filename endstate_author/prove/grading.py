"""Grading one end state without an agent: the building block of every overlay check."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from endstate_author.prove.model import ProveContext, Unassessed
from endstate_harness.graders import grade, reads_sealed_state_only, requirements_checks
from endstate_harness.graders.environment import (
    ProgramProbe,
    environment_failure,
    program_probe,
)
from endstate_harness.sandbox.base import Sandbox, SandboxError, TreeSandbox
from endstate_harness.sandbox.choice import SandboxChoice
from endstate_harness.task import GraderSpec, Task
from endstate_harness.verdict import Verdict


@dataclass
class Graded:
    verdict: Verdict
    per_grader: list[Verdict]
    """One verdict per grader of the task, in its order (``until_rejected``: only those that
    ran, cheapest first)."""
    written: list[str] = field(default_factory=list)


def least_counters(task: Task) -> tuple[dict[str, int], str]:
    """Each counter at the least its bound asks for, and the stop reason asked for."""
    counters = {name: (b.min or 0) for name, b in task.requires.bounds().items()}
    return counters, task.requires.stop_reason or "end_turn"


def zero_counters(task: Task) -> tuple[dict[str, int], str]:
    return {}, task.requires.stop_reason or "end_turn"


def grade_end_state(
    task: Task,
    spec: SandboxChoice,
    *,
    overlays: Sequence[Path] = (),
    mutate: Callable[[Path], list[str]] | None = None,
    counters: dict[str, int] | None = None,
    stop_reason: str = "end_turn",
    after_holdout: Callable[[Task, TreeSandbox], None] | None = None,
    search_paths: Sequence[Path] = (),
    holdout: bool = True,
    until_rejected: bool = False,
    graders: Sequence[GraderSpec] | None = None,
) -> Graded:
    """Build an end state without an agent, seal it, stage the holdout, grade, conjoin requires.

    ``overlays`` are copied onto the fixture as if the agent had written them; ``mutate`` edits
    the live tree (a probe) and returns the files it wrote; ``after_holdout`` stages more
    beside the holdout (the holdout sentinel); ``holdout=False`` grades without it (the
    visible tests alone, ES912). Raises :class:`Unassessed` when the sandbox
    cannot be made or used.

    ``until_rejected`` is for a check that asks only *whether* the end state is rejected (a
    probe, a mutant): the graders that read nothing but the sealed end state go
    first (:func:`~endstate_harness.graders.reads_sealed_state_only`: their verdict does not
    depend on when they run, and they start no process), the others keep the task's order, and
    grading stops at the first grader that fails. A path guard that already rejects a probe's
    edit of the tests then spares the test run. The answer is the one grading every grader
    gives, since a conjunction with one failed member fails; only a later grader's
    environment failure, which would have made the check unassessed, goes unseen (the
    directions checks grade every grader and report it).

    ``graders``: grade only these of the task's graders (the mutants' batch grades the ones
    that read the sealed state here, and its test grader apart).
    """
    sandbox = spec.make(task.fixture)
    try:
        try:
            sandbox.setup()
            sandbox.start()
            for overlay in overlays:
                sandbox.stage(overlay)
            written = mutate(sandbox.live) if mutate is not None else []
            sandbox.seal()
            if holdout and task.holdout is not None:
                sandbox.stage(task.holdout)
            if after_holdout is not None:
                after_holdout(task, sandbox)
        except SandboxError as exc:
            raise Unassessed(str(exc)) from exc
        except OSError as exc:
            raise Unassessed(f"the sandbox could not be prepared: {exc}") from exc
        requires = Verdict.from_checks(
            requirements_checks(task.requires, counters or {}, stop_reason)
        )
        graded = grade_with(
            sandbox, list(task.graders if graders is None else graders), requires,
            program_probe(sandbox), search_paths=search_paths, until_rejected=until_rejected,
        )
        graded.written = written
        return graded
    finally:
        sandbox.close()


def shared_end_state(
    ctx: ProveContext,
    *,
    overlays: Sequence[Path] = (),
    counters: dict[str, int] | None = None,
    stop_reason: str = "end_turn",
) -> Graded:
    """:func:`grade_end_state` of an end state built from overlays alone (no edit, the
    holdout and nothing beside it staged, every grader graded), once per pass over the task's
    checks: the checks that grade the same end state alike read one grading
    (:class:`~endstate_author.prove.model.Shared` says which, and why). The result is read,
    never changed, by the checks that share it."""
    key = (
        "end state", tuple(str(p) for p in overlays),
        tuple(sorted((counters or {}).items())), stop_reason,
    )  # fmt: skip
    graded: Graded = ctx.shared.get(key, lambda: grade_end_state(
        ctx.task, ctx.spec, overlays=overlays, counters=counters, stop_reason=stop_reason,
        search_paths=ctx.search_paths,
    ))
    return graded


def grade_with(
    sandbox: Sandbox,
    graders: list[GraderSpec],
    requires: Verdict,
    probe: ProgramProbe,
    *,
    search_paths: Sequence[Path] = (),
    until_rejected: bool = False,
) -> Graded:
    """``graders`` on an end state already sealed in ``sandbox``, conjoined with ``requires``
    (:func:`grade_end_state`'s grading; ``until_rejected`` as there). A grader's environment
    failure, or the sandbox's, raises :class:`Unassessed`."""
    if until_rejected:
        graders = sorted(graders, key=lambda g: not reads_sealed_state_only(g))  # stable
    per_grader: list[Verdict] = []
    for grader in graders:
        if until_rejected and per_grader and not per_grader[-1].passed:
            break
        try:
            one = grade([grader], sandbox, search_paths=search_paths)
        except SandboxError as exc:
            raise Unassessed(f"sandbox error while grading: {exc}") from exc
        why = environment_failure(one, specs=[grader], probe=probe)
        if why is not None:
            raise Unassessed(why)
        per_grader.append(one)
    verdict = per_grader[0]
    for other in [*per_grader[1:], requires]:
        verdict = verdict.merged_with(other)
    return Graded(verdict, per_grader)


MAX_CHECK_DETAIL = 2400
"""Characters of one failed check's detail that a finding carries (cut between words, with
the count of what was left out); the judge's own details fit well within it."""

_FRAME = re.compile(r'^\s*File "(?P<path>[^"]+)", line (?P<line>\d+)')


def _short_path(path: str) -> str:
    """A sandbox path as the tree names it (``tests/test_x.py``), else its last two parts."""
    for marker in ("/live/", "/trusted/"):
        if marker in path:
            return path.rsplit(marker, 1)[1]
    return "/".join(path.replace("\\", "/").split("/")[-2:])


def tidy_tracebacks(text: str) -> str:
    """Each Python traceback in ``text`` reduced to where it ended and what it raised:
    ``(at tests/test_x.py:8) AssertionError: …``. The frames of the test runner are noise in
    a one-line finding; the exception and the line of the test are what the author needs."""
    out: list[str] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        if lines[i].strip() != "Traceback (most recent call last):":
            out.append(lines[i])
            i += 1
            continue
        i += 1
        where = ""
        while i < len(lines) and (lines[i].startswith(" ") or not lines[i].strip()):
            found = _FRAME.match(lines[i])
            if found:
                where = f"{_short_path(found['path'])}:{found['line']}"
            i += 1
        if where:
            out.append(f"(at {where})")
    return "\n".join(out)


def bounded(text: str, limit: int = MAX_CHECK_DETAIL) -> str:
    """``text`` on one line, at most ``limit`` characters, cut between words (never inside
    one), saying how much was left out."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    cut = flat.rfind(" ", 0, limit)
    head = flat[:cut] if cut > 0 else flat.split(" ", 1)[0]
    left = flat[len(head):].split()
    return f"{head} … ({len(left)} more words left out)"


def failed_check(name: str, detail: str | None) -> str:
    """``expected "NAME", got: DETAIL`` — a check is named for what it expects, so its name
    is quoted as the expectation and its detail stands where the outcome belongs, whole up to
    :data:`MAX_CHECK_DETAIL` (cut between words, the rest counted)."""
    text = bounded(tidy_tracebacks(detail or ""))
    return f'expected "{name}", got: {text}' if text else f'expected "{name}": not met'


def failing_detail(graded: Graded) -> str:
    parts = []
    if graded.verdict.reason and not graded.verdict.checks:
        parts.append(graded.verdict.reason)
    for check in graded.verdict.checks:
        if not check.passed:
            parts.append(failed_check(check.name, check.detail))
    for verdict in graded.per_grader:
        if not verdict.passed and not verdict.checks and verdict.reason:
            parts.append(verdict.reason)
    return "; ".join(dict.fromkeys(parts)) or graded.verdict.reason


def first_failing_grader(graded: Graded) -> int | None:
    for i, verdict in enumerate(graded.per_grader):
        if not verdict.passed:
            return i
    return None
