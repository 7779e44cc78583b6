"""The eval report: ``report.md`` for people, ``results.json`` for machines. Errors are kept
out of every rate, an unknown cost stays unknown, percentiles are nearest-rank.

Every string of the run in report.md (task ids, check names, details, errors, which quote the
code under test) is written by :mod:`endstate_author.engine.textsafe` to render as exactly itself:
no image, link, HTML or table break can come out of an exception message. results.json keeps
them as data.
"""

from __future__ import annotations

import json
import math
import statistics
from collections import defaultdict
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

import endstate_author.evalreport.units as units
from endstate_author.engine.textsafe import md_block, md_code, md_text
from endstate_harness.runner import SuiteResult, TaskResult
from endstate_harness.sandbox.choice import where_ran


class PriceError(ValueError):
    """The prices file is unreadable or malformed (the message says where)."""


Prices = dict[str, tuple[Decimal, Decimal]]
"""model -> (USD per million input tokens, USD per million output tokens)."""


def load_prices(path: Path) -> Prices:
    """Read ``{model: {"input_per_mtok": x, "output_per_mtok": y}}``; strict on every entry."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise PriceError(f"{path}: {exc}") from exc
    if not isinstance(data, dict):
        raise PriceError(f"{path}: expected an object mapping model names to prices")
    prices: Prices = {}
    for model, entry in data.items():
        if not isinstance(entry, dict) or set(entry) != {"input_per_mtok", "output_per_mtok"}:
            raise PriceError(
                f'{path}: {model!r} must be {{"input_per_mtok": number, "output_per_mtok": number}}'
            )
        try:
            pair = tuple(Decimal(str(entry[k])) for k in ("input_per_mtok", "output_per_mtok"))
        except InvalidOperation as exc:
            raise PriceError(f"{path}: {model!r} has a price that is not a number") from exc
        if any(
            not v.is_finite() or v < 0 or isinstance(entry[k], bool)
            for v, k in zip(pair, ("input_per_mtok", "output_per_mtok"), strict=True)
        ):
            raise PriceError(f"{path}: {model!r} prices must be non-negative numbers")
        prices[model] = (pair[0], pair[1])
    return prices


def cost_of(result: TaskResult, prices: Prices) -> Decimal | None:
    """USD for one run, or None when its model has no price."""
    price = prices.get(result.model)
    if price is None:
        return None
    million = Decimal(1_000_000)
    return (
        Decimal(result.usage.input_tokens) * price[0]
        + Decimal(result.usage.output_tokens) * price[1]
    ) / million


def percentile(values: list[float], fraction: float) -> float | None:
    """Nearest-rank percentile; None for no data."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, min(len(ordered), math.ceil(fraction * len(ordered))))
    return ordered[rank - 1]


def _rate(passed: int, total: int) -> float | None:
    return None if total == 0 else passed / total


SCRIPTED_PROVIDERS = ("oracle", "scripted")
"""Providers that call no model: a run of theirs costs nothing to price, so the report shows
no cost at all (not "unknown", not $0) and says its latencies are the scripted agent's."""


def summarise_suite(suite: SuiteResult, prices: Prices | None = None) -> dict[str, Any]:
    """The numbers of the report, as plain JSON-able values."""
    prices = prices or {}
    results = suite.results
    assessed = [r for r in results if not r.error]
    errors = [r for r in results if r.error]
    passed = sum(1 for r in assessed if r.passed)
    by_category: dict[str, list[TaskResult]] = defaultdict(list)
    for r in assessed:
        by_category[r.category].append(r)
    latencies = [s for r in results for s in r.latencies_s]
    costs = [cost_of(r, prices) for r in results if r.steps]
    known = [c for c in costs if c is not None]
    unpriced = sorted(
        {r.model or "(unknown)" for r in results if r.steps and prices.get(r.model) is None}
    )
    # a price for every run that called a model, or no total: a sum over no priced run is
    # not $0 (an eval with no prices, or where every run errored, has an unknown cost)
    total_cost = None if unpriced or not known else sum(known, Decimal(0))
    per_task: dict[str, list[TaskResult]] = defaultdict(list)
    for r in results:
        per_task[r.task_id].append(r)
    flake: dict[str, Any] = {}
    if suite.repeat > 1:
        for task_id, runs in per_task.items():
            outcomes = [r.passed for r in runs if not r.error]
            wins = sum(outcomes)
            flake[task_id] = {
                "attempts": len(runs),
                "assessed": len(outcomes),
                "passed": wins,
                "flaky": 0 < wins < len(outcomes),
                "flake_rate": None
                if not outcomes
                else min(wins, len(outcomes) - wins) / len(outcomes),
            }
    return {
        "runs": len(results),
        "assessed": len(assessed),
        "passed": passed,
        "failed": len(assessed) - passed,
        "errors": len(errors),
        "pass_rate": _rate(passed, len(assessed)),
        "pass_rate_by_category": {
            c: {
                "passed": sum(r.passed for r in rs),
                "assessed": len(rs),
                "pass_rate": _rate(sum(r.passed for r in rs), len(rs)),
            }
            for c, rs in sorted(by_category.items())
        },
        "median_steps": statistics.median([r.steps for r in assessed]) if assessed else None,
        "input_tokens": sum(r.usage.input_tokens for r in results),
        "output_tokens": sum(r.usage.output_tokens for r in results),
        "total_tokens": sum(r.usage.total_tokens for r in results),
        "tokens_estimated": any(r.usage_estimated for r in results),
        "model_called": suite.provider not in SCRIPTED_PROVIDERS,
        "cost_usd": None if total_cost is None else float(total_cost),
        "cost_per_run_usd": None if total_cost is None else float(total_cost / len(results)),
        "unpriced_models": unpriced,
        "latency_p50_s": percentile(latencies, 0.50),
        "latency_p95_s": percentile(latencies, 0.95),
        "compaction_events_per_run": (
            sum(r.compaction_events for r in results) / len(results) if results else None
        ),
        "denied_calls": sum(r.denied_calls for r in results),
        "unsettled_calls": sum(r.unsettled_calls for r in results),
        "flake": flake,
    }


@dataclass(frozen=True)
class RunFacts:
    """What the suite result does not hold: where the run ran (``SandboxChoice.describe()``)
    and each task's content hash when it ran (:func:`endstate_author.taskhash.content_hash`)."""

    sandbox: dict[str, str | None] = field(default_factory=dict)
    task_hashes: dict[str, str] = field(default_factory=dict)


def results_json(
    suite: SuiteResult, prices: Prices | None = None, facts: RunFacts | None = None
) -> dict[str, Any]:
    """The content of results.json: run metadata, the summary, one entry per run."""
    prices = prices or {}
    facts = facts or RunFacts()
    rows = []
    for r in suite.results:
        cost = cost_of(r, prices)
        rows.append(
            {
                "task_id": r.task_id,
                "task_hash": facts.task_hashes.get(r.task_id),
                "attempt": r.attempt,
                "category": r.category,
                "passed": r.passed,
                "error": r.error or None,
                "reason": r.reason,
                "stop_reason": r.stop_reason,
                "steps": r.steps,
                "usage": {
                    "input_tokens": r.usage.input_tokens,
                    "output_tokens": r.usage.output_tokens,
                    "total_tokens": r.usage.total_tokens,
                    "estimated": r.usage_estimated,
                },
                "cost_usd": None if cost is None else float(cost),
                "compaction_events": r.compaction_events,
                "denied_calls": r.denied_calls,
                "unsettled_calls": r.unsettled_calls,
                "tool_calls": r.tool_calls,
                "wall_clock_s": r.wall_clock_s,
                "latencies_s": r.latencies_s,
                "timed_out": r.timed_out,
                "killed": r.killed,
                "model": r.model,
                "sandbox": r.sandbox,
                "walls": r.walls,
                "tree_hash": r.tree_hash,
                "session_id": r.session_id,
                "checks": [c.model_dump() for c in r.checks],
                **({"node": r.node} if r.node else {}),
            }
        )
    return {
        "started_at": suite.started_at,
        "duration_s": suite.duration_s,
        "provider": suite.provider,
        "model": suite.model,
        "sandbox": suite.sandbox,
        "sandbox_image": facts.sandbox.get("image"),
        "sandbox_reason": facts.sandbox.get("reason"),
        "walls": suite.walls,
        "repeat": suite.repeat,
        "summary": summarise_suite(suite, prices),
        "results": rows,
    }


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.0%}"


def _num(value: float | None, fmt: str = "{:.2f}") -> str:
    return "n/a" if value is None else fmt.format(value)


_cell = md_text
"""A table cell or a line of text from the run: renders as exactly the text, never as
markup (an exception message of the code under test holds whatever it likes)."""


def render_markdown(
    suite: SuiteResult, prices: Prices | None = None, facts: RunFacts | None = None
) -> str:
    s = summarise_suite(suite, prices)
    where = where_ran(suite.sandbox, (facts or RunFacts()).sandbox.get("image"), suite.walls)
    est = " (est.)" if s["tokens_estimated"] else ""
    cost = "unknown" if s["cost_per_run_usd"] is None else f"${s['cost_per_run_usd']:.4f}"
    priced = s["model_called"]
    lines = [
        f"# Eval report: {_cell(suite.model or 'unknown model')}",
        "",
        f"- Started: {_cell(suite.started_at or 'unknown')}; wall clock {suite.duration_s:.1f}s",
        f"- Provider: {_cell(suite.provider or 'unknown')}; sandbox: {_cell(where)}",
        f"- Runs: {s['runs']} ({suite.repeat} per task); assessed {s['assessed']}, "
        f"errors {s['errors']} (kept out of the pass rate)",
        "",
        "## Summary",
        "",
        "| pass rate | median steps | input tok | output tok | "
        + ("USD/run | " if priced else "")
        + "p50 latency | p95 latency | compactions/run | denied | unsettled |",
        "| --- | --- | --- | --- | " + ("--- | " if priced else "")
        + "--- | --- | --- | --- | --- |",
        f"| {_pct(s['pass_rate'])} ({s['passed']}/{s['assessed']}) | "
        f"{_num(s['median_steps'], '{:g}')} | {s['input_tokens']:,}{est} | "
        f"{s['output_tokens']:,}{est} | "
        + (f"{cost} | " if priced else "")
        + f"{units.seconds(s['latency_p50_s'])} | {units.seconds(s['latency_p95_s'])} "
        f"| {_num(s['compaction_events_per_run'])} | {s['denied_calls']} | "
        f"{s['unsettled_calls']} |",
    ]
    if s["tokens_estimated"]:
        lines += [
            "",
            "Token counts include chars/4 estimates (scripted runs, or no usage "
            "reported by the provider).",
        ]
    if s["unpriced_models"] and priced:
        unpriced = _cell(", ".join(s["unpriced_models"]))
        lines += ["", f"Cost unknown: no price for {unpriced}."]
    lines += [
        "",
        "## By category",
        "",
        "| category | passed | assessed | pass rate |",
        "| --- | --- | --- | --- |",
    ]
    for category, row in s["pass_rate_by_category"].items():
        lines.append(
            f"| {_cell(category)} | {row['passed']} | {row['assessed']} "
            f"| {_pct(row['pass_rate'])} |"
        )
    if s["flake"]:
        lines += [
            "",
            "## Flakiness",
            "",
            "| task | passed | assessed | flake rate |",
            "| --- | --- | --- | --- |",
        ]
        for task_id, row in s["flake"].items():
            mark = " (flaky)" if row["flaky"] else ""
            lines.append(
                f"| {md_code(task_id, in_table=True)} | {row['passed']} | {row['assessed']} | "
                f"{_pct(row['flake_rate'])}{mark} |"
            )
    lines += [
        "",
        "## Runs",
        "",
        "| task | try | category | verdict | stop | steps | tokens | s | denied | compactions |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in suite.results:
        verdict = "ERROR" if r.error else ("pass" if r.passed else "FAIL")
        if r.walls == "none" and not r.error:
            verdict += " (no walls)"  # graded where the agent's code could reach the host
        lines.append(
            f"| {md_code(r.task_id, in_table=True)} | {r.attempt + 1} | {_cell(r.category)} | "
            f"{verdict} | {_cell(r.stop_reason)}"
            f"{' (timeout)' if r.timed_out else ''} | {r.steps} | {r.usage.total_tokens:,} | "
            f"{r.wall_clock_s:.1f} | {r.denied_calls} | {r.compaction_events} |"
        )
    errors = [r for r in suite.results if r.error]
    if errors:
        lines += ["", "## Errors (not assessed)", ""]
        for r in errors:  # a traceback keeps its lines
            lines += [f"### {md_code(r.task_id)} (try {r.attempt + 1})", "", *md_block(r.error), ""]
    failures = [r for r in suite.results if not r.passed and not r.error]
    if failures:
        lines += ["", "## Failures", ""]
        for r in failures:
            lines += [f"### {md_code(r.task_id)} (try {r.attempt + 1})", ""]
            why = expected_failure(suite.provider, r.category)
            if why:
                lines += [f"Expected: {why}", ""]  # the toolkit's own words
            failing = [c for c in r.checks if not c.passed]
            for c in failing:
                detail = (c.detail or "").strip()
                if "\n" in detail:
                    lines += [f"- failed: {_cell(c.name)}", "", *md_block(detail, "  "), ""]
                else:
                    said = f" ({_cell(detail)})" if detail else ""
                    lines.append(f"- failed: {_cell(c.name)}{said}")
            if not failing:
                lines.append(f"- {_cell(r.reason or 'failed')}")
            lines.append("")
    return "\n".join(lines).rstrip() + "\n"


ORACLE_CANNOT_PASS = {
    "compaction": "the plain oracle writes the solution in a few steps, so its context never "
    "fills and no compaction happens, which this task requires "
    "(`requires.compaction_events`); prove's guard check drives compaction instead",
    "permissioning": "the plain oracle writes solution/, and a permissioning task has none: it "
    "never makes the request the policy must refuse, so no call is denied "
    "(`requires.denied_calls`); prove's guard check makes the request instead",
}
"""Why ``--provider oracle`` fails these categories by design (not a defect of the task)."""


def expected_failure(provider: str, category: str) -> str | None:
    """The reason a failure is expected (the plain oracle on compaction/permissioning)."""
    return ORACLE_CANNOT_PASS.get(category) if provider == "oracle" else None


def write_report(
    suite: SuiteResult, out: Path, prices: Prices | None = None, facts: RunFacts | None = None
) -> list[Path]:
    """Write report.md and results.json into ``out`` (created); returns the two paths."""
    out.mkdir(parents=True, exist_ok=True)
    md = out / "report.md"
    js = out / "results.json"
    md.write_text(render_markdown(suite, prices, facts), encoding="utf-8")
    data = results_json(suite, prices, facts)
    js.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return [md, js]
