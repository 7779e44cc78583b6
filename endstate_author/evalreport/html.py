"""report.html and compare.html: one self-contained file each, to open from disk or CI."""

from __future__ import annotations

from collections.abc import Callable
from html import escape
from pathlib import Path
from typing import Any

import endstate_author.evalreport.charts as charts
import endstate_author.evalreport.units as units
from endstate_author.evalreport.compare import Comparison, describe_difference, sandbox_line
from endstate_author.evalreport.results import SCRIPTED_PROVIDERS, expected_failure, percentile
from endstate_author.evalreport.run import Run, failing_checks, verdict

CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:2rem auto;max-width:1100px;color:#222;
padding:0 1rem}
h1{font-size:1.5rem;margin-bottom:.2rem}h2{font-size:1.15rem;margin-top:2rem}
.meta{color:#666}.stats{display:flex;flex-wrap:wrap;gap:1rem;margin:1rem 0}
.stat{border:1px solid #ddd;border-radius:6px;padding:.5rem .9rem;min-width:8rem}
.stat b{display:block;font-size:1.3rem}.charts{display:flex;flex-wrap:wrap;gap:1rem}
.chart{border:1px solid #eee;border-radius:6px}.empty{color:#888;font-style:italic}
table{border-collapse:collapse;min-width:50%}th,td{text-align:left;padding:.3rem .5rem;
border-bottom:1px solid #eee;vertical-align:top}td.n,th.n{text-align:right}
.pass{color:#22863a;font-weight:600}.FAIL,.fail{color:#cb2431;font-weight:600}
.ERROR{color:#b08800;font-weight:600}details{border-bottom:1px solid #eee}
details summary{cursor:pointer}.cols,details summary{padding:.35rem .2rem;display:grid;
grid-template-columns:minmax(14rem,2fr) 3rem 8rem 4rem 4rem 6rem 5rem;gap:.5rem}
.cols.head{font-weight:600;border-bottom:2px solid #ccc}
details .body{padding:.3rem 1rem 1rem 1.5rem}pre{white-space:pre-wrap;word-break:break-word;
background:#f6f8fa;padding:.5rem;border-radius:4px;margin:.3rem 0}
.msg{margin:.4rem 0}.role{font-weight:600;text-transform:uppercase;font-size:.75rem;color:#555}
.note{color:#555;font-style:italic}
"""


def _page(title: str, body: list[str]) -> str:
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        # no request may leave the file: a policy that forbids every fetch but inline
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "style-src 'unsafe-inline'; img-src data:\">"
        f"<title>{escape(title)}</title><style>{CSS}</style></head><body>\n"
        + "\n".join(body)
        + "\n</body></html>\n"
    )


def _stat(label: str, value: str) -> str:
    return f'<div class="stat"><b>{escape(value)}</b>{escape(label)}</div>'


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.0%}"


def _chart(svg: str) -> str:
    return f'<div class="chart">{svg}</div>'


def _transcript(run: Run, row: dict[str, Any]) -> str:
    messages = run.transcript(str(row.get("session_id") or ""))
    if messages is None:
        return '<p class="note">no transcript saved for this run (eval --out keeps them)</p>'
    parts = []
    for m in messages:
        text = m["content"] or ""
        if m["calls"]:
            text += ("\n" if text else "") + "\n".join(f"→ {c}" for c in m["calls"])
        if m["result"] is not None:
            text += ("\n" if text else "") + m["result"]
        parts.append(
            f'<div class="msg"><span class="role">{escape(m["role"])}'
            f"{' (error)' if m['error'] else ''}</span><pre>{escape(text)}</pre></div>"
        )
    return "".join(parts) or '<p class="note">the transcript is empty</p>'


def _row(run: Run, row: dict[str, Any]) -> str:
    mark = verdict(row)
    usage = row.get("usage") or {}
    summary = (
        f'<summary role="row"><span>{escape(str(row["task_id"]))}</span>'
        f"<span>{int(row.get('attempt', 0)) + 1}</span>"
        f"<span>{escape(str(row.get('category', '')))}</span>"
        f'<span class="{mark}">{mark}{_unwalled(row, mark)}</span>'
        f'<span>{row.get("steps", 0)}</span>'
        f"<span>{int(usage.get('total_tokens', 0)):,}</span>"
        f"<span>{units.seconds(float(row.get('wall_clock_s', 0.0)))}</span></summary>"
    )
    body = []
    if mark == "ERROR":
        body.append(f"<h4>Error (not assessed)</h4><pre>{escape(str(row['error']))}</pre>")
    why = expected_failure(str(run.data.get("provider", "")), str(row.get("category", "")))
    if mark == "FAIL" and why:
        body.append(f'<p class="note">Expected: {escape(why)}</p>')
    failing = failing_checks(row)
    if failing:
        body.append("<h4>Failing checks</h4>")
        for c in failing:
            detail = str(c.get("detail") or "")
            body.append(
                f"<p>failed: {escape(str(c.get('name', '')))}</p>"
                + (f"<pre>{escape(detail)}</pre>" if detail else "")
            )
    elif mark == "FAIL" and row.get("reason"):
        body.append(f"<p>{escape(str(row['reason']))}</p>")
    body.append("<h4>Transcript</h4>" + _transcript(run, row))
    return f'<details class="task">{summary}<div class="body">{"".join(body)}</div></details>'


def _unwalled(row: dict[str, Any], mark: str) -> str:
    """" (no walls)" after a verdict graded where the agent's code could reach the host."""
    return " (no walls)" if row.get("walls") == "none" and mark != "ERROR" else ""


def _latencies(run: Run) -> list[float]:
    return [float(x) for r in run.rows for x in (r.get("latencies_s") or [])]


SCRIPTED = SCRIPTED_PROVIDERS
"""Providers that call no model: their latencies are the scripted agent's, microseconds."""


def _latency_label(run: Run) -> str:
    if str(run.data.get("provider") or "") in SCRIPTED:
        return "agent-call latency (scripted agent: no model was called)"
    return "model-call latency"


def _table(head: list[str], rows: list[list[str]], numeric_from: int = 1) -> str:
    """A headed table; columns from ``numeric_from`` on are right-aligned numbers. Cells are
    already escaped."""
    def cell(tag: str, i: int, text: str) -> str:
        cls = ' class="n"' if i >= numeric_from else ""
        return f"<{tag}{cls}>{text}</{tag}>"

    header = "".join(cell("th", i, escape(h)) for i, h in enumerate(head))
    body = "".join(
        "<tr>" + "".join(cell("td", i, c) for i, c in enumerate(row)) + "</tr>" for row in rows
    )
    return f"<table><thead><tr>{header}</tr></thead><tbody>{body}</tbody></table>"


def _cards(run: Run) -> list[str]:
    s = run.summary
    cost = s.get("cost_per_run_usd")
    estimated = " (est.)" if s.get("tokens_estimated") else ""
    latency = "latency" if str(run.data.get("provider") or "") not in SCRIPTED else (
        "latency (scripted agent)"
    )
    return [
        '<div class="stats">',
        _stat(
            "pass rate", f"{_pct(s.get('pass_rate'))} ({s.get('passed', 0)}/{s.get('assessed', 0)})"
        ),
        _stat("errors (not assessed)", str(s.get("errors", 0))),
        _stat("median steps", str(s.get("median_steps", "n/a"))),
        _stat("tokens", f"{int(s.get('total_tokens', 0)):,}{estimated}"),
        *([_stat("USD per run", "unknown" if cost is None else f"${cost:.4f}")]
          if s.get("model_called", True) else []),
        _stat(f"p50 {latency}", units.seconds(s.get("latency_p50_s"))),
        _stat(f"p95 {latency}", units.seconds(s.get("latency_p95_s"))),
        "</div>",
    ]


def _categories(run: Run) -> list[str]:
    by_category = run.summary.get("pass_rate_by_category") or {}
    rows = [
        [escape(c), str(v.get("passed", 0)), str(v.get("assessed", 0)), _pct(v.get("pass_rate"))]
        for c, v in by_category.items()
    ]
    out = ["<h2>Pass rate by category</h2>"]
    out.append(_table(["category", "passed", "assessed", "pass rate"], rows))
    assessed = sum(int(v.get("assessed", 0)) for v in by_category.values())
    if len(by_category) > 1 and assessed >= units.MIN_RUNS_FOR_CHART:
        rates = {c: v.get("pass_rate") for c, v in by_category.items()}
        out.append(_chart(charts.pass_rate_by_category(rates)))
    return out


def _spread(values: list[float], show: Callable[[float], str]) -> list[str]:
    if not values:
        return ["0", "n/a", "n/a", "n/a", "n/a"]
    ordered = sorted(values)
    return [
        str(len(values)),
        show(ordered[0]),
        show(percentile(ordered, 0.5) or 0.0),
        show(percentile(ordered, 0.95) or 0.0),
        show(ordered[-1]),
    ]


def _distributions(run: Run) -> list[str]:
    """The numbers of every distribution, always; a histogram only where there is a shape to
    show (:func:`units.is_distribution`)."""
    estimated = " (est.)" if run.summary.get("tokens_estimated") else ""
    steps = [float(r.get("steps", 0)) for r in run.rows]
    tokens = [float((r.get("usage") or {}).get("total_tokens", 0)) for r in run.rows]
    costs = [float(c) for r in run.rows if (c := r.get("cost_usd")) is not None]
    latencies = _latencies(run)
    label = _latency_label(run)
    unit, factor = units.time_unit(max(latencies, default=1.0))
    rows = [
        ["steps per run", *_spread(steps, lambda v: f"{v:g}")],
        [f"tokens per run{estimated}", *_spread(tokens, lambda v: f"{v:,.0f}")],
        ["USD per run", *_spread(costs, lambda v: f"${v:.4f}")]
        if costs
        else ["USD per run (no price for this model: eval --prices)", "0", *["unknown"] * 4],
        [label, *_spread(latencies, units.seconds)],
    ]
    if not run.summary.get("model_called", True):
        rows = [row for row in rows if not str(row[0]).startswith("USD")]
    out = [
        "<h2>Distributions</h2>",
        _table(
            ["per run", "values", "min", "median", "p95", "max"],
            [[escape(c) for c in row] for row in rows],
        ),
    ]
    shown = []
    if units.is_distribution(steps):
        shown.append(charts.histogram("Steps per run", steps, integer=True))
    if units.is_distribution(tokens):
        shown.append(charts.histogram(f"Tokens per run{estimated}", tokens, integer=True))
    if units.is_distribution(costs):
        shown.append(charts.histogram("Cost per run", costs, "USD"))
    if units.is_distribution(latencies):
        scaled = [v * factor for v in latencies]
        shown.append(charts.histogram(label[0].upper() + label[1:], scaled, unit))
    if shown:
        out += ['<div class="charts">', *(_chart(c) for c in shown), "</div>"]
    else:
        out.append(
            f'<p class="note">No charts: {len(run.rows)} run(s) have no distribution to show '
            f"(histograms start at {units.MIN_RUNS_FOR_CHART} values, "
            f"{units.MIN_DISTINCT_FOR_CHART} of them different).</p>"
        )
    return out


RUN_COLUMNS = ("task", "try", "category", "verdict", "steps", "tokens", "time")


def render_report(run: Run) -> str:
    body = [
        f"<h1>Eval report: {escape(str(run.data.get('model') or 'unknown model'))}</h1>",
        f'<p class="meta">provider {escape(str(run.data.get("provider") or "unknown"))}, '
        f"sandbox {escape(run.where)}, started "
        f"{escape(str(run.data.get('started_at') or 'unknown'))}, "
        f"{float(run.data.get('duration_s', 0.0)):.1f}s wall clock</p>",
        *_cards(run),
        *_categories(run),
        *_distributions(run),
        "<h2>Runs</h2>",
        '<p class="note">Click a row for its failing checks and its transcript.</p>',
        '<div class="runs" role="table">',
        '<div class="cols head" role="row">'
        + "".join(f'<span role="columnheader">{c}</span>' for c in RUN_COLUMNS)
        + "</div>",
        *(_row(run, r) for r in run.rows),
        "</div>",
    ]
    return _page(f"Eval report: {run.data.get('model') or ''}", body)


def _fmt(value: Any, metric: str = "") -> str:
    if value is None:
        return "unknown"
    if isinstance(value, float):
        return f"{value:,.4f}" if metric.startswith("cost") else f"{value:,.1f}"
    return f"{value:,}" if isinstance(value, int) else str(value)


def render_compare(c: Comparison) -> str:
    (pa, na), (pb, nb) = c.counts["A"], c.counts["B"]
    rates_a = {
        k: v.get("pass_rate") for k, v in (c.a.summary.get("pass_rate_by_category") or {}).items()
    }
    rates_b = {
        k: v.get("pass_rate") for k, v in (c.b.summary.get("pass_rate_by_category") or {}).items()
    }
    flips = (
        "".join(
            f'<tr><td>{escape(t)}</td><td class="{a}">{a}</td><td class="{b}">{b}</td>'
            f"<td>{escape(c.content.get(t, 'unknown'))}</td></tr>"
            for t, a, b in c.flipped
        )
        or '<tr><td colspan="4" class="note">no task flipped</td></tr>'
    )
    changed = c.tasks_with("changed")
    unknown = c.tasks_with("unknown")
    deltas = "".join(
        f'<tr><td>{escape(k)}</td><td class="n">{_fmt(a, k)}</td><td class="n">{_fmt(b, k)}</td>'
        f'<td class="n">{"unknown" if d is None else ("+" if d > 0 else "") + _fmt(d, k)}</td></tr>'
        for k, (a, b, d) in c.deltas.items()
    )
    body = [
        "<h1>Eval comparison</h1>",
        f'<p class="meta">A: {escape(c.a.label)} — B: {escape(c.b.label)}</p>',
        '<div class="stats">',
        _stat("A: tasks passed", f"{pa}/{na}"),
        _stat("B: tasks passed", f"{pb}/{nb}"),
        _stat("tasks flipped", str(len(c.flipped))),
        "</div>",
        f"<p><b>Pass rate, B − A:</b> {escape(describe_difference(c))}</p>",
        f'<p class="{"FAIL" if c.a.where != c.b.where else "meta"}">'
        f"{escape(sandbox_line(c))}</p>",
        _chart(charts.paired_rates(rates_a, rates_b, ("A", "B"))),
        "<h2>Tasks that flipped</h2>",
        "<table><thead><tr><th>task</th><th>A</th><th>B</th><th>task content</th></tr></thead>"
        + flips
        + "</table>",
        "<h2>Task content</h2>",
        f"<p>{len(c.tasks_with('same'))} of {len(c.common)} shared task(s) the same in both "
        "runs."
        + (
            f' <b class="FAIL">Changed between the runs: {escape(", ".join(changed))}</b> '
            "(a difference there may be the task's, not the model's)."
            if changed
            else ""
        )
        + (
            f" Unknown for {len(unknown)}: a run recorded no task hash (made before they "
            "were kept)."
            if unknown
            else ""
        )
        + "</p>",
        "<h2>Cost and tokens</h2>",
        '<table><thead><tr><th>metric</th><th class="n">A</th><th class="n">B</th>'
        '<th class="n">B − A</th></tr></thead>' + deltas + "</table>",
    ]
    if c.only_a or c.only_b:
        body.append(
            f'<p class="note">Only in A: {escape(", ".join(c.only_a) or "none")}; only in B: '
            f"{escape(', '.join(c.only_b) or 'none')} (left out of the pass rates).</p>"
        )
    return _page("Eval comparison", body)


def write(path: Path, html: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(html, encoding="utf-8")
    return path
