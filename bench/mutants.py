"""Benchmark: full prove of a suite with every mutant (the default) beside the old default of 12.

For a suite (the shipped tasks/ by default), in one run, each as a fresh process with no cache
(``prove SUITE --sandbox local --no-cache``, every check group, default jobs):

* **every mutant** — the default since issue 29: every mutant of the solution's changed lines,
  within the per-task time budget (``--mutant-budget``, 60 s);
* **--mutants 12** — the old default bound.

Each line prints the wall time, the mutants run (and left unrun), the survivors (ES911) and the
mutant checks' share of the summed check time: what running every mutant costs, and what it
finds that the sample did not. Then, for the default run, one line per task: mutants generated,
run, killed, survived, and sampled out (a line whose first mutants all died runs no more of its
mutants: ``endstate_author/prove/checks/mutants.py``).

``--without-holdout`` proves a copy of the suite with every task's holdout removed, so that only
the visible tests judge the mutants: the weak tasks an author most needs prove for, where the
survivors show what the operators (and the sampling of a line by its first mutants) find.

Last, **a task whose mutants loop** (``tests/prove/looping/count-business-days``: its solution
steps through dates a day at a time, and three of its mutants stop the step): its full prove
and its ``--only mutants`` prove, each as a multiple of one bare run of its tests (target
≤ 15×, issue 48), beside the same two figures for a shipped task of about its size
(``fix-semver-precedence``), so that what the looping mutants add is read off one run's load.
Each looping mutant is cut at its time bound and counted killed ("timed out"); the line says
how many were, and how many mutants were left unrun (target 0). ``--looping-only`` runs only
this part.

    .venv/bin/python bench/mutants.py [SUITE] [--sandbox local|docker] [--without-holdout]
                                      [--looping-only]
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from bare import bare_run, precompile
from prove import ROOT, mutant_share, run_prove_report

LOOPING = ROOT / "tests" / "prove" / "looping" / "count-business-days"
LOOPING_PEER = ROOT / "tasks" / "fix-semver-precedence"
TARGET = 15.0
"""Full prove ≤ 15× one bare run of the task's tests, a task whose mutants loop included."""


def _line(label: str, seconds: float, rc: int, report: dict[str, Any]) -> str:
    scores = [t["mutation_score"] for t in report.get("tasks", []) if t.get("mutation_score")]
    run = sum(s["run"] for s in scores)
    unrun = sum(s["not_run"] for s in scores)
    survivors = sum(d["code"] == "ES911" for d in report.get("diagnostics", []))
    mutant_s, all_s, _ = mutant_share(report)
    share = mutant_s / all_s if all_s else 0.0
    return (f"{label:<26}{seconds:8.2f} s  exit {rc}  {run:4d} mutants run, {unrun:4d} not run, "
            f"{survivors:2d} survived (ES911); mutants {share:4.0%} of check time")


def _per_task(report: dict[str, Any]) -> list[str]:
    out = [f"  {'task':<36}{'generated':>10}{'run':>6}{'killed':>8}{'survived':>10}"
           f"{'sampled out':>13}"]
    for task in report.get("tasks", []):
        s = task.get("mutation_score") or {}
        name = Path(str(task.get("task", task.get("path", "?")))).name
        out.append(f"  {name:<36}{s.get('generated', 0):>10}{s.get('run', 0):>6}"
                   f"{s.get('killed', 0):>8}{s.get('survived', 0):>10}"
                   f"{s.get('sampled_out', 0):>13}")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("suite", nargs="?", default=str(ROOT / "tasks"))
    parser.add_argument("--sandbox", default="local", choices=("local", "docker"))
    parser.add_argument("--without-holdout", action="store_true",
                        help="prove a copy of the suite without its holdouts")
    parser.add_argument("--looping-only", action="store_true",
                        help="only the task whose mutants loop, beside a shipped task")
    args = parser.parse_args()
    if args.looping_only:
        _looping(args.sandbox)
        return
    with tempfile.TemporaryDirectory(prefix="endstate-bench-weak-") as weak:
        suite = args.suite
        if args.without_holdout:
            suite = str(Path(weak) / "suite")
            shutil.copytree(args.suite, suite, symlinks=True)
            for holdout in Path(suite).glob("*/holdout"):
                shutil.rmtree(holdout)
        _bench(suite, args.sandbox, args.without_holdout)


def _bench(suite: str, sandbox: str, weak: bool) -> None:
    common = [suite, "--sandbox", sandbox, "--no-cache"]
    lines = []
    tasks: list[str] = []
    for label, extra in (("every mutant (default)", []), ("--mutants 12 (old default)",
                                                           ["--mutants", "12"])):
        with tempfile.TemporaryDirectory(prefix="endstate-bench-mutants-") as cache:
            seconds, rc, report = run_prove_report([*common, *extra], Path(cache))
        lines.append(_line(label, seconds, rc, report))
        if not extra:
            tasks = _per_task(report)
    what = " without its holdouts" if weak else ""
    print(f"suite: {suite}{what}, sandbox {sandbox}, full prove, no cache")
    for line in lines:
        print(line)
    print("every mutant (default), per task:")
    for line in tasks:
        print(line)
    _looping(sandbox)


def _looping(sandbox: str) -> None:
    """The looping task's prove as a multiple of one bare run, beside a shipped task's."""
    precompile()
    print(f"a task whose mutants loop, sandbox {sandbox}, fresh process, no cache "
          f"(load {os.getloadavg()[0]:.1f})")
    for root in (LOOPING, LOOPING_PEER):
        bare = bare_run(root)
        for label, extra in (("full prove", []), ("--only mutants", ["--only", "mutants"])):
            with tempfile.TemporaryDirectory(prefix="endstate-bench-looping-") as cache:
                seconds, rc, report = run_prove_report(
                    [str(root), "--sandbox", sandbox, "--no-cache", *extra], Path(cache))
            score = next((t.get("mutation_score") or {} for t in report.get("tasks", [])), {})
            ratio = seconds / bare if bare else 0.0
            met = "met" if ratio <= TARGET else "NOT met"
            print(f"  {root.name:<28}{label:<16}{seconds:7.2f} s = {ratio:5.1f}x one bare run "
                  f"({bare:.3f} s; target <= {TARGET:g}x: {met}); exit {rc}; "
                  f"{score.get('run', 0)} mutants run, {score.get('timed_out', 0)} killed: "
                  f"timed out, {score.get('not_run', 0)} not run")


if __name__ == "__main__":
    main()
