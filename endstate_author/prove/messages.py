"""The words of prove's findings: what an author reads first decides what they believe."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from endstate_author.engine.context import TaskContext
from endstate_author.engine.diagnostics import Diagnostic, Severity
from endstate_author.prove.model import CheckResult

LEADS = {
    "ES901": "passes although nothing was done",
    "ES902": "fails on the solution",
    "ES903": "the holdout is not load-bearing",
    "ES904": "passes although the guard was removed",
    "ES905": "fails: the guard never fired",
    "ES906": "passes although hacked",
    "ES907": "fails through the harness",
    "ES908": "not proved: the check could not run",
    "ES909": "fails: the check is flaky",
    "ES910": "passes although wrong: a declared defect is accepted",
    # codes of rules.md that other checks emit (mutants, visible tests, redteam)
    "ES911": "passes although mutated: a mutant of the solution is accepted",
    "ES912": "passes before any work",
    "ES913": "passes although the work was not done: a red-team end state is accepted",
    "ES914": "the holdout passes on the untouched fixture",
    "ES915": "a test asserts nothing",
    "ES916": "passes although mutated, and no call tells the mutant from the solution",
}
"""Each code's outcome, as the first words of its finding."""

FOLLOWS_FROM: dict[str, tuple[str, ...]] = {
    "ES906": ("ES901",), "ES910": ("ES901",), "ES911": ("ES901", "ES903"),
    "ES914": ("ES901",), "ES907": ("ES902", "ES905"),
}  # fmt: skip
"""code -> the codes it follows from, first first: when one of them fires too, only the cause
is reported (the oracle writes the very solution ES902 found failing, so its run through the
harness fails too; a holdout file that never runs, ES903, kills no mutant, so the survivors
are counted under it until it runs, not listed one by one; a compaction task whose budget
guard never fires, ES905, fails its oracle's requirement of a compaction event with or
without a reading turn: the guard is the cause)."""

_FOLDED_NAMES = {
    "ES914": "holdout check(s)",
    "ES906": "reward hack(s)",
    "ES907": "oracle run(s) through the harness",
    "ES910": "declared defect(s)",
    "ES911": "mutant(s) of the solution",
    "ES916": "probably equivalent mutant(s)",
}
_FOLDED_VERB = {
    "ES901": "pass too", "ES902": "fail too", "ES903": "survive", "ES905": "fail too",
}


def _common_prefix(details: Sequence[str]) -> str:
    """The words every detail starts with (cut at a word boundary), if any."""
    first = details[0]
    end = len(first)
    for other in details[1:]:
        end = min(end, len(other))
        for i in range(end):
            if first[i] != other[i]:
                end = i
                break
    cut = first[:end]
    return cut[: cut.rfind(" ") + 1] if " " in cut else ""


def message(
    code: str, results: Sequence[CheckResult], also: str = "", fix: str | None = None
) -> str:
    """One finding for ``results`` (same code, same place): outcome, what differs, fix (the
    code's own, unless the caller knows the cause better: ``fix``)."""
    lead = LEADS.get(code, "fails")
    details = [r.detail or r.check for r in results]
    if len(results) == 1:
        body = details[0]
    else:
        # a note several items end with (" — only the holdout can stop this one: ...") is
        # said once, after the list
        split = [d.split(" — ", 1) for d in details]
        notes = list(dict.fromkeys(parts[1] for parts in split if len(parts) > 1))
        heads = [parts[0] for parts in split]
        prefix = _common_prefix(heads)
        items = list(dict.fromkeys(h[len(prefix) :] for h in heads))
        body = f"{len(results)} checks: " + prefix + ", ".join(items)
        body += "".join(f"; {note}" for note in notes)
    text = f"{lead}: {body}" if body else lead
    if also:
        text += f" ({also})"
    if fix is None:
        # the rule registry imports every rule family (~30 ms), for a finding's fix line
        # only; a prove that finds nothing never reads it: deferred
        from endstate_author.rules.registry import fix_line

        fix = fix_line(code)
    return f"{text.rstrip('.')}. Fix: {fix}" if fix else text


def diagnostic_at(
    task_root: Path,
    code: str,
    text: str,
    grader_index: int | None,
    severity: Severity = "error",
    path: str | None = None,
    line: int | None = None,
) -> Diagnostic:
    """An ES9 finding at the solution line it names (a mutant), else at the grader it names,
    else at the graders array of task.json."""
    if path is not None:
        return _at_line(task_root / path, line or 1, code, text, severity)
    ctx = TaskContext(task_root)
    pointer: tuple[str | int, ...] = ("graders", grader_index) if grader_index is not None else ()
    node = ctx.node(pointer) if pointer else None
    if node is None:
        pointer = ("graders",)
        node = ctx.node(pointer)
    if node is None:
        return ctx.at_file(code, text, ctx.manifest_path, severity=severity)
    found = ctx.at_node(code, text, node, severity=severity)
    found.pointer = pointer
    return found


def _at_line(file: Path, line: int, code: str, message: str, severity: Severity) -> Diagnostic:
    """A finding spanning one line's text (leading indentation left out)."""
    try:
        lines = file.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        lines = []
    text = lines[line - 1] if 0 < line <= len(lines) else ""
    start = len(text) - len(text.lstrip())
    return Diagnostic(
        code, severity, message, file, line, start + 1, line, max(len(text), start) + 1
    )


def diagnostics(task_root: Path, checks: Sequence[CheckResult]) -> list[Diagnostic]:
    """The findings of a task's non-passing checks: grouped, outcome first, consequences
    folded into their cause."""
    findings = [c for c in checks if c.outcome in ("fail", "unassessed") and c.code]
    fired = {c.code for c in findings}
    groups: dict[
        tuple[str, int | None, str | None, int | None, str | None], list[CheckResult]
    ] = {}
    folded: dict[str, dict[str, int]] = {}
    for check in findings:
        code = check.code or "ES908"
        cause = next((c for c in FOLLOWS_FROM.get(code, ()) if c in fired), None)
        if cause is not None:
            counts = folded.setdefault(cause, {})
            counts[code] = counts.get(code, 0) + 1
            continue
        # each surviving mutant stays its own finding: its stable id is what an author
        # marks equivalent, and two mutants of one line are two different wrong solutions
        one = check.check if code in ("ES911", "ES916") else None
        place = (code, check.grader_index, check.path, check.line, one)
        groups.setdefault(place, []).append(check)
    out = []
    for (code, index, path, line, _), results in groups.items():
        also = ""
        if folded.get(code):
            also = (
                "so "
                + " and ".join(
                    f"{n} {_FOLDED_NAMES.get(c, 'check(s)')} ({c})"
                    for c, n in sorted(folded[code].items())
                )
                + f" {_FOLDED_VERB.get(code, 'fail too')}, not listed apart"
            )
        first = results[0]
        severity: Severity = first.severity if first.outcome == "fail" else "error"
        text = message(code, results, also)
        found = diagnostic_at(task_root, code, text, index, severity, path, line)
        if len(results) == 1 and first.counterexample is not None:
            mutant = first.check.split()[1] if first.check.startswith("mutant ") else None
            found.counterexample = {**first.counterexample, "mutant_id": mutant}
        if first.evidence is not None:
            found.evidence = first.evidence
        out.append(found)
    return out
