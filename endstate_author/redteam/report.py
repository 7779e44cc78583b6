"""What a red-team run reports: each attempt's outcome, the ES913 findings, the cost."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

from endstate_author.engine.context import TaskContext
from endstate_author.engine.diagnostics import Diagnostic
from endstate_author.engine.textsafe import md_block, shown
from endstate_author.probes.diff import unified_diff
from endstate_author.redteam.attempt import Attempt, render_transcript
from endstate_author.redteam.triage import Triage
from endstate_harness.sandbox.choice import where_ran

DIFF_LINES_SHOWN = 60
"""Lines of a candidate's diff printed in the text output (all of it goes to --out and JSON)."""


@dataclass
class Outcome:
    attempt: Attempt
    triage: Triage | None = None
    probe: Path | None = None
    """Where --save-probe wrote this exploit."""

    @property
    def kind(self) -> str:
        if self.attempt.errored:
            return "error"
        if not self.attempt.candidate:
            return "failed"
        return self.triage.verdict if self.triage is not None else "undecided"

    @property
    def label(self) -> str:
        return f"{self.attempt.task.id}#{self.attempt.index + 1}"

    def diff(self) -> str:
        return unified_diff(self.attempt.changes())


def diagnostics(outcomes: Sequence[Outcome]) -> list[Diagnostic]:
    """One ES913 per confirmed exploit, at the task's graders (where the hole is)."""
    out = []
    for outcome in outcomes:
        if outcome.kind != "exploit":
            continue
        task = outcome.attempt.task
        ctx = TaskContext(task.root)
        changed = ", ".join(c.path for c in outcome.attempt.changes()) or "nothing"
        explanation = outcome.attempt.explanation.splitlines()[0:1]
        message = (
            f"a model found a way to pass without the work (attempt {outcome.attempt.index + 1}, "
            f"changed {changed})" + (f": {explanation[0][:300]}" if explanation else "")
        )
        if outcome.triage is not None:
            message += f" — triage: {outcome.triage.summary}"
        node = ctx.node(("graders",))
        out.append(
            ctx.at_node("ES913", message, node)
            if node is not None
            else ctx.at_file("ES913", message, ctx.manifest_path)
        )
    return out


def cost_summary(outcomes: Sequence[Outcome]) -> dict[str, Any]:
    """Tokens and steps over every attempt, and USD when every attempt's model is priced."""
    results = [o.attempt.result for o in outcomes]
    costs = [o.attempt.cost for o in outcomes]
    known = all(c is not None for c in costs) and bool(costs)
    total = sum((c for c in costs if c is not None), Decimal(0))
    return {
        "attempts": len(results),
        "steps": sum(r.steps for r in results),
        "input_tokens": sum(r.usage.input_tokens for r in results),
        "output_tokens": sum(r.usage.output_tokens for r in results),
        "usd": float(round(total, 6)) if known else None,
        "wall_clock_s": round(sum(r.wall_clock_s for r in results), 3),
    }


def cost_line(summary: dict[str, Any]) -> str:
    usd = summary["usd"]
    price = f"${usd:.4f}" if usd is not None else "cost unknown (no --prices entry for the model)"
    return (
        f"{summary['attempts']} attempt(s), {summary['steps']} model calls, "
        f"{summary['input_tokens']} input + {summary['output_tokens']} output tokens, {price}, "
        f"{summary['wall_clock_s']:.1f}s"
    )


def attempt_json(outcome: Outcome) -> dict[str, Any]:
    attempt = outcome.attempt
    result = attempt.result
    data: dict[str, Any] = {
        "task": attempt.task.id,
        "attempt": attempt.index + 1,
        "outcome": outcome.kind,
        "passed_graders": result.passed,
        "error": result.error,
        "reason": result.reason,
        "steps": result.steps,
        "input_tokens": result.usage.input_tokens,
        "output_tokens": result.usage.output_tokens,
        "usd": None if attempt.cost is None else float(attempt.cost),
        "stop_reason": result.stop_reason,
        "explanation": attempt.explanation,
        "claims_trick": attempt.claims_trick,
    }
    if attempt.candidate:
        data["diff"] = outcome.diff()
        data["transcript"] = [m.model_dump(exclude_defaults=True) for m in attempt.transcript]
    if outcome.triage is not None:
        data["triage"] = outcome.triage.to_json()
    if outcome.probe is not None:
        data["probe"] = str(outcome.probe)
    return data


def to_json(
    outcomes: Sequence[Outcome], sandbox: dict[str, str | None] | None = None
) -> dict[str, Any]:
    """``sandbox``: where the attempts ran (``SandboxChoice.describe()``)."""
    return {
        "sandbox": sandbox,
        "attempts": [attempt_json(o) for o in outcomes],
        "diagnostics": [d.to_json() for d in diagnostics(outcomes)],
        "cost": cost_summary(outcomes),
    }


_MARK = {
    "exploit": "EXPLOIT (ES913)",
    "undecided": "passed, undecided",
    "did-the-work": "passed, probably did the work anyway",
    "failed": "failed the graders",
    "error": "ERROR (unassessed)",
}


def render_text(
    outcomes: Sequence[Outcome], sandbox: dict[str, str | None] | None = None
) -> str:
    """Where the attempts ran, every attempt on one line, then each candidate with its
    evidence (and an exploit's explanation and diff), then the cost; every control, escape
    and bidirectional character as a visible escape
    (:func:`~endstate_author.engine.textsafe.shown`)."""
    lines = []
    if sandbox:
        lines.append(f"sandbox: {where_ran(sandbox.get('kind'), sandbox.get('image'))}")
    for o in outcomes:
        r = o.attempt.result
        why = f": {r.error}" if o.kind == "error" else ""
        lines.append(f"{o.label:30} {_MARK[o.kind]} ({r.steps} steps){why}")
    for o in outcomes:
        if o.triage is None:
            continue
        lines += ["", f"== {o.label}: {_MARK[o.kind]}", f"triage: {o.triage.summary}"]
        lines += [f"  - {e.describe()}" for e in o.triage.evidence]
        if o.kind in ("exploit", "undecided"):
            lines.append("explanation: " + (o.attempt.explanation or "(none given)"))
            diff = o.diff().splitlines()
            lines += diff[:DIFF_LINES_SHOWN]
            if len(diff) > DIFF_LINES_SHOWN:
                lines.append(f"… {len(diff) - DIFF_LINES_SHOWN} more diff lines (see --out)")
        if o.probe is not None:
            lines.append(f"saved as a suite probe: {o.probe}")
    lines += ["", "cost: " + cost_line(cost_summary(outcomes))]
    # the model's explanation, its diff and errors quote the end state: shown, never obeyed
    return shown("\n".join(lines))


def write_out(
    outcomes: Sequence[Outcome], out: Path, sandbox: dict[str, str | None] | None = None
) -> list[Path]:
    """results.json, and per candidate a folder with diff.patch, explanation.md and
    transcript.md."""
    out.mkdir(parents=True, exist_ok=True)
    written = [out / "results.json"]
    data = to_json(outcomes, sandbox)
    written[0].write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    for o in outcomes:
        if not o.attempt.candidate:
            continue
        folder = out / f"{o.attempt.task.id}-{o.attempt.index + 1}"
        folder.mkdir(exist_ok=True)
        for name, text in (
            ("diff.patch", o.diff()),
            # the model's words, quoted: they render as text, never as its markup
            ("explanation.md", "\n".join(md_block(o.attempt.explanation)) + "\n"),
            ("transcript.md", render_transcript(o.attempt.transcript)),
        ):
            (folder / name).write_text(text, encoding="utf-8")
            written.append(folder / name)
    return written


def exit_code(outcomes: Sequence[Outcome]) -> int:
    """1 for any ES913 finding; else 2 when any attempt could not be assessed (or triage
    could not decide); else 0."""
    kinds = {o.kind for o in outcomes}
    if "exploit" in kinds:
        return 1
    if kinds & {"error", "undecided"}:
        return 2
    return 0
