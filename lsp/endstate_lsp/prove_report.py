"""Reading what prove prints for the server: its JSON report, and where its findings about
task.json go (its ``--progress-json`` lines and the report's checks are read by
endstate_author's wire module).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from endstate_author.engine.diagnostics import Diagnostic, Severity
from endstate_author.engine.jsonpos import JsonDocument, parse
from endstate_author.engine.textsafe import one_line
from endstate_lsp.state import ProveResult


def read_prove(
    out: bytes, code: int | None, seconds: float, cwd: Path, stderr: str = ""
) -> ProveResult:
    """prove's JSON report → findings and a one-line summary for the code lens (with what
    prove said on stderr when there is no report: one error before any check ran). Called in
    a worker thread: the report's checks are read by prove's own wire module."""
    # deferred: prove's package (~0.2 s to import) loads off the event loop, in this thread
    from endstate_author.assist.proof import checks_of_report

    try:
        report = json.loads(out.decode("utf-8", errors="replace") or "null")
    except ValueError:
        report = None
    if not isinstance(report, dict):
        why = f": {stderr[:300]}" if stderr else ", no JSON report"
        # the lens and the progress show it: prove's stderr made visible, never obeyed
        return ProveResult(False, one_line(f"prove failed to run (exit {code}{why})"), seconds)
    diags: list[Diagnostic] = []
    for item in report.get("diagnostics") or []:
        if not isinstance(item, dict) or not isinstance(item.get("code"), str):
            continue
        file = Path(str(item.get("file") or "task.json"))
        if not file.is_absolute():
            file = cwd / file
        sev: Severity = "warning" if item.get("severity") == "warning" else "error"
        pointer = item.get("pointer")
        diags.append(
            Diagnostic(
                code=item["code"],
                severity=sev,
                message=str(item.get("message", "")),
                file=file,
                line=_int(item.get("line"), 1),
                column=_int(item.get("column"), 1),
                end_line=_int(item.get("end_line"), _int(item.get("line"), 1)),
                end_column=_int(item.get("end_column"), _int(item.get("column"), 1)),
                pointer=tuple(p for p in pointer if isinstance(p, str | int))
                if isinstance(pointer, list) else None,
                counterexample=example if isinstance(
                    example := item.get("counterexample"), dict) else None,
            )
        )
    try:
        checks = checks_of_report(report)
    except ValueError as exc:  # a newer prove's wire version: said, never guessed at
        return ProveResult(False, one_line(f"prove's report cannot be read: {exc}"), seconds)
    outcomes = [c.outcome for c in checks]
    failed = [c.check for c in checks if c.outcome == "fail"]
    unassessed = [c.check for c in checks if c.outcome == "unassessed"]
    if failed:
        summary = f"prove failed: {', '.join(failed[:3])}" + (" …" if len(failed) > 3 else "")
    elif unassessed:
        summary = f"prove unassessed: {', '.join(unassessed[:3])}"
    elif diags:
        summary = f"prove: {len(diags)} findings"
    else:
        summary = f"proved: {outcomes.count('pass')} checks passed"
    scores = [
        t["mutation_score"]
        for t in report.get("tasks") or []
        if isinstance(t, dict) and isinstance(t.get("mutation_score"), dict)
    ]
    if scores:
        killed = sum(_int(s.get("killed"), 0) for s in scores)
        run = sum(_int(s.get("run"), 0) for s in scores)
        unrun = sum(_int(s.get("not_run"), 0) for s in scores)
        summary += f", mutants {killed}/{run} killed"
        if unrun:  # a sample's count, never read as the task's score
            summary += f" ({unrun} not run)"
    summary += f", {seconds:.1f} s"
    ok = not failed and not unassessed and not any(d.severity == "error" for d in diags)
    return ProveResult(ok, one_line(summary), seconds, diags)


def _int(value: Any, default: int) -> int:
    return (
        value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else default
    )


def place_findings(diags: list[Diagnostic], data: bytes) -> list[Diagnostic]:
    """Put prove's findings about a node of task.json (their ``pointer``: the grader a check
    names, or the graders array) on that node of the editor's buffer, which may have moved
    since prove read the file; the buffer is parsed once."""
    doc: JsonDocument | None = None
    out = []
    for diag in diags:
        if diag.file.name != "task.json" or not diag.pointer:
            out.append(diag)
            continue
        if doc is None:
            doc = parse(data)
        out.append(_place(diag, doc))
    return out


def _place(diag: Diagnostic, doc: JsonDocument) -> Diagnostic:
    assert diag.pointer is not None
    target = doc.node_at_path(diag.pointer) or doc.node_at_path(("graders",))
    if target is None:
        return diag
    sl, sc = doc.index.position(target.start)
    el, ec = doc.index.position(target.end)
    return replace(
        diag,
        line=sl + 1,
        column=sc + 1,
        end_line=el + 1,
        end_column=ec + 1,
        start_offset=target.start,
        end_offset=target.end,
    )
