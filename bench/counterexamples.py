"""Benchmark: the counterexample search of surviving mutants, per task (issue 44).

Each task is proved as a fresh process with no cache (``prove TASK --sandbox local --no-cache
--only mutants -o json``) and, for every survivor, the search looks for a call on which the
mutant and the solution differ. Printed per task: the survivors, how many got a
counterexample (ES911, an error with its call), how many are left probably equivalent
(ES916, a warning), the calls tried, the search's seconds and the whole prove's; then the
totals, and every ES911's call and ES916's mutant, so a reader can check each verdict.

    .venv/bin/python bench/counterexamples.py [SUITE_OR_TASK ...] [--budget SECONDS]

With no path: the shipped tasks. endstate's own 22 tasks are another suite to point it at
(a checkout of endstate's repository, its ``tasks/`` folder).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def _tasks(paths: list[Path]) -> list[Path]:
    out = []
    for path in paths:
        if (path / "task.json").is_file():
            out.append(path)
        else:
            out.extend(sorted(p.parent for p in path.glob("*/task.json")))
    return out


def prove(task: Path, cache: Path, budget: float) -> tuple[float, dict[str, Any]]:
    env = {**os.environ, "ENDSTATE_AUTHOR_CACHE": str(cache)}
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "endstate_author", "prove", str(task), "--sandbox", "local",
         "--no-cache", "--only", "mutants", "-o", "json", "--quiet",
         "--counterexample-budget", str(budget)],
        capture_output=True, text=True, env=env, timeout=1800,
    )
    seconds = time.perf_counter() - started
    try:
        return seconds, json.loads(proc.stdout)
    except json.JSONDecodeError:
        print(f"{task.name}: prove printed no JSON (exit {proc.returncode}): {proc.stderr[-400:]}")
        return seconds, {}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", type=Path, default=[ROOT / "tasks"])
    parser.add_argument("--budget", type=float, default=30.0,
                        help="--counterexample-budget per task (seconds)")
    args = parser.parse_args()
    tasks = _tasks(args.paths)
    totals = {"survivors": 0, "counterexamples": 0, "probably_equivalent": 0}
    listed: list[str] = []
    print(f"{'task':42} {'survivors':>9} {'ES911':>6} {'ES916':>6} {'calls':>6} "
          f"{'search s':>9} {'prove s':>8}")
    with tempfile.TemporaryDirectory(prefix="endstate-bench-cx-") as tmp:
        for task in tasks:
            seconds, report = prove(task, Path(tmp) / task.name, args.budget)
            search: dict[str, Any] = {}
            for proof in report.get("tasks", []):
                search = (proof.get("mutation_score") or {}).get("counterexample_search") or {}
                for check in proof.get("checks", []):
                    found = check.get("counterexample")
                    if found:
                        listed.append(f"  {task.name}: ES911 {check['check']}: {found['call']}:"
                                      f" solution {found['solution']}, mutant {found['mutant']}")
            for d in report.get("diagnostics", []):
                if d["code"] == "ES916":
                    listed.append(f"  {task.name}: ES916 {d['message'][:220]}")
            for key in totals:
                totals[key] += int(search.get(key, 0))
            print(f"{task.name:42} {search.get('survivors', 0):>9} "
                  f"{search.get('counterexamples', 0):>6} "
                  f"{search.get('probably_equivalent', 0):>6} {search.get('calls_tried', 0):>6} "
                  f"{search.get('seconds', 0.0):>9.1f} {seconds:>8.1f}")
    print(f"\n{len(tasks)} task(s): {totals['survivors']} survivors, "
          f"{totals['counterexamples']} with a counterexample (ES911), "
          f"{totals['probably_equivalent']} probably equivalent (ES916)")
    print("\nEach verdict, to check by hand:")
    print("\n".join(listed) or "  (none)")


if __name__ == "__main__":
    main()
