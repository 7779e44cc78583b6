"""Benchmark: prove's wall time against the floor of the test commands it had to run.

For a suite (the shipped tasks/ by default), in one run:

* **floor** — the bare test-command executions prove's directions check needs: for every
  task, the test command on the fixture and on the fixture with solution/ overlaid (holdout
  staged in both), run as plain subprocesses in plain temp copies, one at a time;
* **prove** — ``endstate-author prove --only directions --jobs 1 --sandbox local --no-cache``
  (one core, no cache), as a fresh process;
* **cached** — the same prove again with the cache on, after one run has filled it;
* **full** — optional (``--full``): every check group with the default jobs, and the
  share of it the mutants (ES911) take: their checks' seconds over every check's seconds
  in that run, and the wall time of ``--only mutants`` beside the full run's; beside it the
  same full prove with ``ENDSTATE_WARM=0`` (no warm judge, no warm runner in the sandbox),
  each as a multiple of one bare run per task of its test command on the solved tree (target
  ≤ 15× per task; ``bench/warm.py`` prints it per task with the differential).

Targets (issue "prove"): directions-only ≤ 1.3× the floor on one core; a cached re-run of
an unchanged suite ≤ 0.3 s.

    .venv/bin/python bench/prove.py [SUITE] [--full] [--sandbox local|docker]
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

from bare import bare_env, precompile, run_once, solved_tree, test_command

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def floor_for(task_root: Path, solved_only: bool = False) -> float:
    """The task's test command on the fixture and on the solved tree (holdout staged in
    both), one run each, the interpreter run directly (``bench/bare.py``)."""
    command = test_command(json.loads((task_root / "task.json").read_text()))
    if command is None:
        return 0.0
    total = 0.0
    overlays: list[tuple[str, ...]] = [(), ("solution",)]
    if not (task_root / "solution").is_dir():
        overlays = [()]
    if solved_only:
        overlays = overlays[-1:]
    for extra in overlays:
        with tempfile.TemporaryDirectory(prefix="endstate-floor-") as tmp:
            tree = solved_tree(task_root, Path(tmp) / "live", extra)
            total += run_once(command, tree, bare_env(tmp))
    return total


def run_prove(args: list[str], cache: Path) -> tuple[float, int]:
    seconds, rc, _ = run_prove_report(args, cache)
    return seconds, rc


def run_prove_report(args: list[str], cache: Path,
                     extra_env: dict[str, str] | None = None) -> tuple[float, int, dict]:
    env = {**os.environ, "ENDSTATE_AUTHOR_CACHE": str(cache), **(extra_env or {})}
    started = time.perf_counter()
    proc = subprocess.run([str(BIN / "endstate-author"), "prove", *args, "-o", "json"],
                          env=env, capture_output=True, text=True)
    try:
        report = json.loads(proc.stdout)
    except ValueError:
        report = {}
    return time.perf_counter() - started, proc.returncode, report


def mutant_share(report: dict) -> tuple[float, float, int]:
    """(mutant check seconds, every check's seconds, mutants run) of one prove report."""
    checks = [c for t in report.get("tasks", []) for c in t.get("checks", [])]
    mutants = [c for c in checks if c["check"].startswith("mutant ") and c["outcome"] != "skipped"]
    return sum(c["seconds"] for c in mutants), sum(c["seconds"] for c in checks), len(mutants)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("suite", nargs="?", default=str(ROOT / "tasks"))
    parser.add_argument("--sandbox", default="local", choices=("local", "docker"))
    parser.add_argument("--full", action="store_true", help="also time every check group")
    args = parser.parse_args()
    precompile()
    suite = Path(args.suite)
    tasks = sorted(p.parent for p in suite.rglob("task.json")
                   if not {"fixture", "holdout", "solution", "defects"} & set(p.parts))
    floor = sum(floor_for(t) for t in tasks)
    with tempfile.TemporaryDirectory(prefix="endstate-bench-prove-") as cache_dir:
        cache = Path(cache_dir)
        common = [str(suite), "--sandbox", args.sandbox]
        directions, rc = run_prove([*common, "--only", "directions", "--jobs", "1",
                                    "--no-cache"], cache)
        run_prove([*common, "--only", "directions", "--jobs", "1"], cache)
        cached, _ = run_prove([*common, "--only", "directions", "--jobs", "1"], cache)
        full = None
        if args.full:
            full, full_rc, report = run_prove_report([*common, "--no-cache"], cache)
            mutant_s, all_s, mutants_run = mutant_share(report)
            only_mutants, _ = run_prove([*common, "--only", "mutants", "--no-cache"], cache)
            fresh_full, _, _ = run_prove_report([*common, "--no-cache"], cache,
                                                {"ENDSTATE_WARM": "0"})
            bare = sum(floor_for(t, solved_only=True) for t in tasks)
    print(f"suite: {suite} ({len(tasks)} tasks), sandbox {args.sandbox}")
    print(f"floor (bare test commands, 1 core)    {floor:8.2f} s")
    print(f"prove --only directions --jobs 1      {directions:8.2f} s  (exit {rc})")
    print(f"ratio prove / floor                   {directions / floor if floor else 0:8.2f}x"
          "  (target <= 1.3x)")
    print(f"cached re-run (fresh process)         {cached:8.2f} s  (target <= 0.3 s)")
    if full is not None:
        print(f"full prove, every check, default jobs {full:8.2f} s  (exit {full_rc})")
        print(f"prove --only mutants (default bound)  {only_mutants:8.2f} s  "
              f"({mutants_run} mutants; {only_mutants / full if full else 0:.0%} of the full "
              "run's wall time)")
        print(f"mutants' share of check time (full)   {mutant_s / all_s if all_s else 0:8.0%}"
              f"  ({mutant_s:.1f} s of {all_s:.1f} s summed over checks)")
        print(f"one bare run per task, summed         {bare:8.2f} s")
        print(f"full prove, warm / bare               {full / bare if bare else 0:8.1f}x"
              f"   fresh (ENDSTATE_WARM=0) {fresh_full:.2f} s = "
              f"{fresh_full / bare if bare else 0:.1f}x  (target <= 15x)")


if __name__ == "__main__":
    main()
