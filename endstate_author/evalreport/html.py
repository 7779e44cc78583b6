"""report.html and compare.html: one self-contained file each, to open from disk or CI.

Everything is inline — the CSS, the charts (static SVG from :mod:`.charts`), the transcripts —
and there is no script at all: a task's row expands with ``<details>``, so the page works
where scripts are blocked and never makes a request of its own. Every value from a run is
escaped: a transcript holds whatever the model wrote.
"""

from __future__ import annotations

from html import escape
from pathlib import Path
from typing import Any

from endstate_author.evalreport import charts
from endstate_author.evalreport.compare import Comparison, describe_difference
from endstate_author.evalreport.results import expected_failure
from endstate_author.evalreport.run import Run, failing_checks, verdict

CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:2rem auto;max-width:1100px;color:#222;
padding:0 1rem}
h1{font-size:1.5rem;margin-bottom:.2rem}h2{font-size:1.15rem;margin-top:2rem}
.meta{color:#666}.stats{display:flex;flex-wrap:wrap;gap:1rem;margin:1rem 0}
.stat{border:1px solid #ddd;border-radius:6px;padding:.5rem .9rem;min-width:8rem}
.stat b{display:block;font-size:1.3rem}.charts{display:flex;flex-wrap:wrap;gap:1rem}
.chart{border:1px solid #eee;border-radius:6px}.empty{color:#888;font-style:italic}
table{border-collapse:collapse;width:100%}th,td{text-align:left;padding:.3rem .5rem;
border-bottom:1px solid #eee;vertical-align:top}td.n,th.n{text-align:right}
.pass{color:#22863a;font-weight:600}.FAIL,.fail{color:#cb2431;font-weight:600}
.ERROR{color:#b08800;font-weight:600}details{border-bottom:1px solid #eee}
details summary{cursor:pointer;padding:.35rem .2rem;display:grid;
grid-template-columns:minmax(14rem,2fr) 3rem 8rem 4rem 4rem 6rem 5rem;gap:.5rem}
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
        f"<summary><span>{escape(str(row['task_id']))}</span>"
        f"<span>{int(row.get('attempt', 0)) + 1}</span>"
        f"<span>{escape(str(row.get('category', '')))}</span>"
        f'<span class="{mark}">{mark}{_unwalled(row, mark)}</span>'
        f'<span>{row.get("steps", 0)}</span>'
        f"<span>{int(usage.get('total_tokens', 0)):,}</span>"
        f"<span>{float(row.get('wall_clock_s', 0.0)):.1f}s</span></summary>"
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


def render_report(run: Run) -> str:
    s = run.summary
    cost = s.get("cost_per_run_usd")
    rates = {c: v.get("pass_rate") for c, v in (s.get("pass_rate_by_category") or {}).items()}
    costs = [r.get("cost_usd") for r in run.rows]
    body = [
        f"<h1>Eval report: {escape(str(run.data.get('model') or 'unknown model'))}</h1>",
        f'<p class="meta">provider {escape(str(run.data.get("provider") or "unknown"))}, '
        f"sandbox {escape(str(run.data.get('walls') or run.data.get('sandbox', '')))}, started "
        f"{escape(str(run.data.get('started_at') or 'unknown'))}, "
        f"{float(run.data.get('duration_s', 0.0)):.1f}s wall clock</p>",
        '<div class="stats">',
        _stat(
            "pass rate", f"{_pct(s.get('pass_rate'))} ({s.get('passed', 0)}/{s.get('assessed', 0)})"
        ),
        _stat("errors (not assessed)", str(s.get("errors", 0))),
        _stat("median steps", str(s.get("median_steps", "n/a"))),
        _stat("tokens", f"{int(s.get('total_tokens', 0)):,}"),
        _stat("USD per run", "unknown" if cost is None else f"${cost:.4f}"),
        _stat(
            "p95 latency", "n/a" if s.get("latency_p95_s") is None else f"{s['latency_p95_s']:.2f}s"
        ),
        "</div>",
        "<h2>Pass rate by category</h2>",
        _chart(charts.pass_rate_by_category(rates)),
        "<h2>Distributions</h2>",
        '<div class="charts">',
        _chart(charts.histogram("Steps per run", [r.get("steps", 0) for r in run.rows])),
        _chart(
            charts.histogram(
                "Tokens per run", [(r.get("usage") or {}).get("total_tokens", 0) for r in run.rows]
            )
        ),
        _chart(
            charts.histogram("Cost per run", [c for c in costs if c is not None], "USD")
            if any(c is not None for c in costs)
            else '<p class="empty">Cost per run: unknown (no price for this model; '
            "eval --prices)</p>"
        ),
        _chart(charts.histogram("Model-call latency", _latencies(run), "s")),
        "</div>",
        "<h2>Runs</h2>",
        '<p class="note">Click a row for its failing checks and its transcript.</p>',
        '<div class="runs">',
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
            f'<tr><td>{escape(t)}</td><td class="{a}">{a}</td><td class="{b}">{b}</td></tr>'
            for t, a, b in c.flipped
        )
        or '<tr><td colspan="3" class="note">no task flipped</td></tr>'
    )
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
        _chart(charts.paired_rates(rates_a, rates_b, ("A", "B"))),
        "<h2>Tasks that flipped</h2>",
        "<table><tr><th>task</th><th>A</th><th>B</th></tr>" + flips + "</table>",
        "<h2>Cost and tokens</h2>",
        '<table><tr><th>metric</th><th class="n">A</th><th class="n">B</th>'
        '<th class="n">B − A</th></tr>' + deltas + "</table>",
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
