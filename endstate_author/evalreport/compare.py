"""Two eval runs side by side: which tasks flipped, and whether the difference is real."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from endstate_author.evalreport.run import Run

Z95 = 1.959963984540054


def wilson(passed: int, total: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval of ``passed/total``; (0, 1) with no data."""
    if total == 0:
        return 0.0, 1.0
    p = passed / total
    centre = (p + z * z / (2 * total)) / (1 + z * z / total)
    half = z * math.sqrt(p * (1 - p) / total + z * z / (4 * total * total)) / (1 + z * z / total)
    return max(0.0, centre - half), min(1.0, centre + half)


def newcombe(pa: int, na: int, pb: int, nb: int) -> tuple[float, float, float] | None:
    """(difference, low, high) of rate B minus rate A, 95%; None when a run has no data."""
    if na == 0 or nb == 0:
        return None
    a, b = pa / na, pb / nb
    la, ua = wilson(pa, na)
    lb, ub = wilson(pb, nb)
    diff = b - a
    low = diff - math.sqrt((b - lb) ** 2 + (ua - a) ** 2)
    high = diff + math.sqrt((ub - b) ** 2 + (a - la) ** 2)
    return diff, max(-1.0, low), min(1.0, high)


def task_outcomes(run: Run) -> dict[str, str]:
    """task id -> pass / fail / error, by the majority of assessed tries (a tie fails)."""
    tries: dict[str, list[bool]] = {}
    for row in run.rows:
        tries.setdefault(row["task_id"], [])
        if not row.get("error"):
            tries[row["task_id"]].append(bool(row.get("passed")))
    out = {}
    for task, outcomes in tries.items():
        if not outcomes:
            out[task] = "error"
        else:
            out[task] = "pass" if sum(outcomes) * 2 > len(outcomes) else "fail"
    return out


def _total(run: Run, key: str) -> float | None:
    values = [row.get(key) for row in run.rows]
    if any(v is None for v in values):
        return None
    return float(sum(values))  # type: ignore[arg-type]


def _tokens(run: Run) -> int:
    return sum(int((row.get("usage") or {}).get("total_tokens", 0)) for row in run.rows)


@dataclass
class Comparison:
    a: Run
    b: Run
    outcomes_a: dict[str, str]
    outcomes_b: dict[str, str]
    flipped: list[tuple[str, str, str]] = field(default_factory=list)
    """(task, outcome in A, outcome in B) for tasks that went pass <-> fail."""
    only_a: list[str] = field(default_factory=list)
    only_b: list[str] = field(default_factory=list)
    counts: dict[str, tuple[int, int]] = field(default_factory=dict)
    """run label -> (tasks passed, tasks assessed) over the tasks both runs hold."""
    difference: tuple[float, float, float] | None = None
    deltas: dict[str, tuple[Any, Any, Any]] = field(default_factory=dict)
    """metric -> (A, B, B - A); a cost is None when a run has no price."""
    content: dict[str, str] = field(default_factory=dict)
    """task (in both runs) -> same / changed / unknown: whether the task's content hash
    differs between the runs (unknown: a run from before hashes were recorded)."""

    @property
    def common(self) -> list[str]:
        return sorted(self.content)

    def tasks_with(self, state: str) -> list[str]:
        return [t for t, s in sorted(self.content.items()) if s == state]


class NothingToCompare(ValueError):
    """The two runs share no task: there is no pass rate, no flip, nothing to compare."""


def task_hashes(run: Run) -> dict[str, str | None]:
    """task id -> its content hash when the run recorded one (``task_hash``), else None."""
    out: dict[str, str | None] = {}
    for row in run.rows:
        value = row.get("task_hash")
        known = value if isinstance(value, str) and value else None
        out[row["task_id"]] = out.get(row["task_id"]) or known
    return out


def _content(a: Run, b: Run, both: list[str]) -> dict[str, str]:
    ha, hb = task_hashes(a), task_hashes(b)
    out = {}
    for task in both:
        x, y = ha.get(task), hb.get(task)
        out[task] = "unknown" if x is None or y is None else ("same" if x == y else "changed")
    return out


def compare(a: Run, b: Run) -> Comparison:
    """The comparison of two runs over the tasks they share.

    Raises:
        NothingToCompare: they share no task (the message names what each holds).
    """
    oa, ob = task_outcomes(a), task_outcomes(b)
    both = [t for t in oa if t in ob]
    if not both:
        raise NothingToCompare(
            f"the two runs have no task in common, so there is nothing to compare: "
            f"A ({a.label}) ran {_names(oa)}; B ({b.label}) ran {_names(ob)}"
        )
    result = Comparison(a, b, oa, ob)
    result.content = _content(a, b, both)
    result.only_a = sorted(set(oa) - set(ob))
    result.only_b = sorted(set(ob) - set(oa))
    for task in sorted(both):
        if {oa[task], ob[task]} == {"pass", "fail"}:
            result.flipped.append((task, oa[task], ob[task]))
    pa = sum(oa[t] == "pass" for t in both)
    na = sum(oa[t] != "error" for t in both)
    pb = sum(ob[t] == "pass" for t in both)
    nb = sum(ob[t] != "error" for t in both)
    result.counts = {"A": (pa, na), "B": (pb, nb)}
    result.difference = newcombe(pa, na, pb, nb)
    cost_a, cost_b = _total(a, "cost_usd"), _total(b, "cost_usd")
    result.deltas = {
        "cost (USD)": (
            cost_a,
            cost_b,
            None if cost_a is None or cost_b is None else cost_b - cost_a,
        ),
        "tokens": (_tokens(a), _tokens(b), _tokens(b) - _tokens(a)),
        "tokens per run": _per_run(_tokens(a), len(a.rows), _tokens(b), len(b.rows)),
        "steps per run": _per_run(
            sum(int(r.get("steps", 0)) for r in a.rows),
            len(a.rows),
            sum(int(r.get("steps", 0)) for r in b.rows),
            len(b.rows),
        ),
    }
    return result


def _names(outcomes: dict[str, str], most: int = 5) -> str:
    if not outcomes:
        return "no task"
    names = sorted(outcomes)
    more = f" and {len(names) - most} more" if len(names) > most else ""
    shown = ", ".join(names[:most]) + more
    return f"{len(names)} task(s): {shown}"


def _per_run(total_a: float, runs_a: int, total_b: float, runs_b: int) -> tuple[Any, Any, Any]:
    ma = total_a / runs_a if runs_a else None
    mb = total_b / runs_b if runs_b else None
    return ma, mb, None if ma is None or mb is None else mb - ma


def sandbox_line(c: Comparison) -> str:
    """Where each run's code ran, and a warning when that differs: a pass rate measured in
    Docker and one measured without walls are not the same measurement."""
    a, b = c.a.where, c.b.where
    if a == b:
        return f"sandbox: both runs {a}"
    return (f"sandbox: A ran {a}, B ran {b}: DIFFERENT sandboxes (a difference may be the "
            "sandbox's, not the model's)")


def describe_difference(c: Comparison) -> str:
    """``+12 points (95% CI -8 to +31): not distinguishable from no change`` or similar."""
    if c.difference is None:
        return "no assessed task in one of the runs: no pass rate to compare"
    diff, low, high = c.difference
    text = f"{100 * diff:+.0f} points (95% CI {100 * low:+.0f} to {100 * high:+.0f})"
    if low > 0:
        return text + ": B is better"
    if high < 0:
        return text + ": B is worse"
    return text + ": not distinguishable from no change at this size"
