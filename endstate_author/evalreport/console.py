"""The eval summary on the console, as real tables.

Every string of the run (task ids, check names, details, errors: an exception message of the
code under test, a child's stderr) goes out as a :class:`Text`
of :mod:`endstate_author.engine.textsafe`'s making: rich reads no markup in it, and no escape
sequence or bidirectional override of it reaches the terminal."""

from __future__ import annotations

from typing import Any

from rich.console import Console, Group
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

import endstate_author.evalreport.units as units
from endstate_author.engine.textsafe import one_line, shown
from endstate_author.evalreport.results import expected_failure
from endstate_author.evalreport.run import Run, failing_checks, verdict

_STYLE = {"pass": "green", "FAIL": "bold red", "ERROR": "yellow"}


def _cell(value: object) -> Text:
    """A table cell from the run's data: a :class:`Text` (rich reads no markup in it) of the
    value with every control, escape and bidirectional character made visible."""
    return Text(one_line(str(value)))


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.0%}"


def _num(value: float | None, fmt: str = "{:.2f}") -> str:
    return "n/a" if value is None else fmt.format(value)


def summary_table(run: Run) -> Table:
    s = run.summary
    cost = s.get("cost_per_run_usd")
    priced = s.get("model_called", True)  # a scripted agent's run has no cost to show
    table = Table(title="Summary", title_justify="left", show_edge=False)
    names = ["pass rate", "median steps", "tokens", *(["USD/run"] if priced else []),
             "p50 latency", "p95 latency"]
    for name in names:
        table.add_column(name, justify="right", no_wrap=True)
    table.add_row(
        f"{_pct(s.get('pass_rate'))} ({s.get('passed', 0)}/{s.get('assessed', 0)})",
        _num(s.get("median_steps"), "{:g}"),
        f"{s.get('total_tokens', 0):,}" + (" (est.)" if s.get("tokens_estimated") else ""),
        *(["unknown" if cost is None else f"${cost:.4f}"] if priced else []),
        units.seconds(s.get("latency_p50_s")),
        units.seconds(s.get("latency_p95_s")),
    )
    return table


def category_table(run: Run) -> Table:
    table = Table(title="By category", title_justify="left", show_edge=False)
    for name in ("category", "passed", "assessed", "pass rate"):
        table.add_column(name, justify="left" if name == "category" else "right", no_wrap=True)
    for category, row in (run.summary.get("pass_rate_by_category") or {}).items():
        table.add_row(
            _cell(category), str(row["passed"]), str(row["assessed"]), _pct(row.get("pass_rate"))
        )
    return table


def runs_table(run: Run) -> Table:
    table = Table(title="Runs", title_justify="left", show_edge=False)
    table.add_column("task", no_wrap=True)
    for name in ("try", "category", "verdict", "stop", "steps", "tokens", "seconds"):
        table.add_column(name, no_wrap=True, justify="right" if name != "category" else "left")
    for r in run.rows:
        mark = verdict(r)
        table.add_row(
            _cell(r["task_id"]),
            str(int(r.get("attempt", 0)) + 1),
            _cell(r.get("category", "")),
            Text(mark, style=_STYLE[mark]),
            _cell(str(r.get("stop_reason", "")) + (" (timeout)" if r.get("timed_out") else "")),
            str(r.get("steps", 0)),
            f"{(r.get('usage') or {}).get('total_tokens', 0):,}",
            f"{float(r.get('wall_clock_s', 0.0)):.1f}",
        )
    return table


def problems(run: Run) -> list[Any]:
    """Each failing run with only its failing checks; each error with its whole text."""
    out: list[Any] = []
    provider = str(run.data.get("provider", ""))
    for r in run.rows:
        mark = verdict(r)
        if mark == "pass":
            continue
        head = Text(one_line(f"{mark} {r['task_id']} (try {int(r.get('attempt', 0)) + 1})"))
        head.stylize(_STYLE[mark], 0, len(mark))
        out.append(head)
        if mark == "ERROR":
            out.append(Padding(Text(shown(str(r["error"]).rstrip())), (0, 0, 0, 4), expand=False))
            continue
        why = expected_failure(provider, str(r.get("category", "")))
        if why:
            out.append(Padding(Text(f"expected: {why}", style="dim"), (0, 0, 0, 4), expand=False))
        for check in failing_checks(r):
            name = one_line(f"failed: {check.get('name', '')}")
            out.append(Padding(Text(name), (0, 0, 0, 4), expand=False))
            detail = str(check.get("detail") or "").rstrip()
            if detail:
                out.append(Padding(Text(shown(detail), style="dim"), (0, 0, 0, 6), expand=False))
        if not failing_checks(r) and r.get("reason"):
            out.append(Padding(Text(shown(str(r["reason"]))), (0, 0, 0, 4), expand=False))
    return out


def print_report(run: Run, console: Console) -> None:
    """The whole console summary. In a pipe the width is not the terminal's: tables are
    laid out wide enough for their widest row rather than wrapped at 80 columns."""
    if not console.is_terminal:
        console = Console(file=console.file, width=10_000, highlight=False, no_color=True)
    title = one_line(f"Eval report: {run.data.get('model') or 'unknown model'}")
    meta = one_line(
        f"provider {run.data.get('provider') or 'unknown'}, sandbox "
        f"{run.where}, {len(run.rows)} run(s), "
        f"{float(run.data.get('duration_s', 0.0)):.1f}s"
    )
    parts: list[Any] = [Text(title, style="bold"), Text(meta), Text("")]
    parts += [summary_table(run), Text(""), category_table(run), Text(""), runs_table(run)]
    found = problems(run)
    if found:
        parts += [Text(""), Text("Failures and errors", style="bold"), *found]
    console.print(Group(*parts), crop=False)
