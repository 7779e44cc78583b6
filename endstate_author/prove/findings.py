"""What a proof adds once its checks are done (or could not start): the diagnostics of its
checks, the lint findings that bear on it, and the proofs of a task that does not load or
whose proving failed.

Why apart from :mod:`endstate_author.prove.run`: these read lint's context and rules and the
rule registry's messages (~0.05 s of imports on one core), which the first check never
needs; ``run`` imports this module when a proof is finished, by which time the checks have
run beside the imports instead of after them.
"""

from __future__ import annotations

from pathlib import Path

import endstate_author.prove.messages as messages
import endstate_author.prove.preflight as preflight
from endstate_author.engine.config import discover
from endstate_author.engine.context import TaskContext
from endstate_author.engine.diagnostics import Diagnostic, escaped
from endstate_author.lint.run import lint_paths
from endstate_author.prove.model import CheckResult, TaskProof
from endstate_author.rules.es3_assertions import verdict_in_process
from endstate_author.rules.es4_directory import unusable_entry
from endstate_harness.task import Task


def finish(proof: TaskProof, task: Task, mutant_limit: int | None, suite_root: Path) -> None:
    """The mutation score and the diagnostics of ``proof``'s checks, and the static warnings."""
    proof.mutation = None
    if any(c.group == "mutants" for c in proof.checks):  # a score only where mutants ran
        # the mutants' module (their generator, their cache), which a proof without them
        # (``--only visible``) need not import: deferred
        from endstate_author.prove.checks import mutants

        mutation = mutants.score(task, mutant_limit, proof.checks)
        proof.mutation = mutation.to_json() if mutation is not None else None
    proof.diagnostics = messages.diagnostics(proof.path, proof.checks)
    proof.diagnostics.extend(static_warnings(proof.path, suite_root))


def static_warnings(root: Path, suite_root: Path) -> list[Diagnostic]:
    """Lint findings that bear on what a proof means, repeated beside its checks.

    ES311: a task whose test verdict is decided in the agent's process proves clean against
    the probes prove knows, yet a payload aimed at the runner could still pass it; the proof
    says so (a warning, not a failed check), as lint does. ES414: an entry of the task's
    trees no sandbox can use (a fifo, a name that is not UTF-8 or is too long), which is why
    checks of it could not run. The suite's configuration applies.
    """
    config = discover(suite_root)
    ctx = TaskContext(root, suite_root=suite_root, config=config)
    return [
        config.apply(d)
        for d in [*verdict_in_process(ctx), *unusable_entry(ctx)]
        if config.enabled(d.code, root.name)
    ]


LOAD_STOPPERS = ("ES0", "ES1", "ES2", "ES401")
"""Lint's codes for what keeps a task from loading: the file, the manifest's keys and values,
the grader entries, a missing fixture/."""


GRADER_STOPPERS = ("ES0", "ES1", "ES2")
"""Lint's codes for a grader entry the harness cannot resolve (the manifest's keys and values,
the grader's name, its arguments against its signature)."""


def _stoppers(task_root: Path, prefixes: tuple[str, ...]) -> list[Diagnostic]:
    """Lint's errors of ``prefixes`` for the task, as its suite's configuration has them."""
    try:
        found = lint_paths([task_root]).diagnostics
    except Exception:  # lint's own usage errors: no finding to stop on
        return []
    return [d for d in found if d.severity == "error" and d.code.startswith(prefixes)]


def stopped(task_root: Path, suspects: set[str]) -> TaskProof | None:
    """The proof of a task lint rejects for a reason that keeps every check from running
    (``preflight.suspects`` said where to look): lint's findings, once, and one check row;
    None when lint finds no such error (the checks run and say what they find)."""
    prefixes: tuple[str, ...] = ()
    if preflight.GRADERS in suspects:
        prefixes += GRADER_STOPPERS
    if preflight.LINKS in suspects:
        prefixes += ("ES410",)  # a link out of the trees: the sandbox refuses to copy them
    if preflight.SPECIAL in suspects:
        prefixes += ("ES414",)  # a fifo, socket or device: no sandbox copies it
    causes = _stoppers(task_root, prefixes) if prefixes else []
    if not causes:
        return None
    listed = ", ".join(f"{d.code} at {_where(task_root, d)}" for d in causes)
    shown = {(d.code, str(d.file), d.line, d.message) for d in causes}
    # the static errors a finished proof shows beside its checks (ES414: a name no sandbox
    # can use), as lint gives them: the same errors for the same task, stopped or not
    extra = [d for d in static_warnings(task_root, task_root.parent)
             if d.severity == "error" and (d.code, str(d.file), d.line, d.message) not in shown]
    proof = TaskProof(task_root.name, task_root, diagnostics=[*causes, *extra])
    proof.checks.append(CheckResult(
        "load", "directions", "fail",
        detail=f"the task cannot be graded ({listed}), so nothing else was checked",
    ))
    return proof


def _where(task_root: Path, d: Diagnostic) -> str:
    """``line:column`` in task.json, else the file's path in the task and its line."""
    if d.file == task_root / "task.json":
        return f"{d.line}:{d.column}"
    try:
        rel = d.file.relative_to(task_root).as_posix()
    except ValueError:
        rel = d.file.name
    return f"{escaped(rel)}:{d.line}"


def load_failure(task_root: Path, error: str) -> TaskProof:
    """A task that does not load: lint's own findings for the cause (ES001 invalid JSON,
    ES101 an unknown key…), at their positions, never an environment problem (ES908).
    The one check row says nothing else was checked."""
    try:
        found = lint_paths([task_root], isolated=True).diagnostics
    except Exception:  # lint's own usage errors: the loader's message stands alone
        found = []
    causes = [d for d in found if d.severity == "error" and d.code.startswith(LOAD_STOPPERS)]
    proof = TaskProof(task_root.name, task_root)
    if causes:
        listed = ", ".join(f"{d.code} at {_where(task_root, d)}" for d in causes)
        detail = f"the task does not load ({listed}), so nothing else was checked"
        proof.diagnostics = causes
    else:
        # the loader refused what lint accepts: lint and the loader disagree (ES000, the
        # linter's own failure), never blamed on the environment
        short = error.split(": ", 1)[-1] if error.startswith(str(task_root)) else error
        detail = f"the task does not load, so nothing else was checked: {short}"
        text = f"the task does not load although lint finds no error: {short}"
        proof.diagnostics = [TaskContext(task_root).at_file("ES000", text, task_root / "task.json")]
    proof.checks.append(CheckResult("load", "directions", "fail", detail=detail))
    return proof


def failed_proof(root: Path, exc: Exception) -> TaskProof:
    """A task whose proving failed inside prove itself: unassessed (ES908), with the error,
    beside the static findings that may say why (an entry no sandbox can use, ES414)."""
    why = f"{type(exc).__name__}: {exc}".encode("utf-8", "surrogateescape").decode(
        "utf-8", "backslashreplace")
    result = CheckResult(
        "prove", "directions", "unassessed", code="ES908",
        detail=f"proving this task failed in prove itself, so nothing was proved: {why}",
    )
    proof = TaskProof(root.name, root, [result])
    # the cause is prove's own failure, not the environment: ES908's usual fix ("start
    # Docker, build the image") would send the author the wrong way
    fix = "this is a failure of prove itself, not of the task or the environment: report it."
    proof.diagnostics.append(messages.diagnostic_at(
        root, "ES908", messages.message("ES908", [result], fix=fix), None))
    try:
        proof.diagnostics.extend(static_warnings(root, root.parent))
    except Exception:  # the static findings are a courtesy here, not a second failure
        pass
    return proof


