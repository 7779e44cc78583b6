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
  ≤ 15× per task; ``bench/warm.py`` prints it per task with the differential);
* **per task** — optional (``--per-task``): each task's full prove (every check group, every
  mutant, the counterexample search; a fresh process, no cache, default jobs) as a multiple
  of one bare run of its test command (``bench/bare.py``), beside the fixed cost of a prove
  with one check (``--only visible``) and a prove without mutants (``--mutants 0``), which
  say where a task's time goes: start-up, the gradings other than the mutants, the mutants.
  ``--versus EXE`` runs another ``endstate-author`` (an install of an older commit) the same
  way, interleaved with this one run for run, so that a comparison shares the machine's load;
  ``--repeat N`` keeps each one's fastest of N (load only ever adds time). The CPU seconds
  of each full prove (its process tree's) are printed last: on a shared machine they move
  far less with the load than the wall time does, and as a multiple of one bare run's.

Targets (issue "prove"): directions-only ≤ 1.3× the floor on one core; a cached re-run of
an unchanged suite ≤ 0.3 s. Issue 48: full prove median ≤ 10×, worst ≤ 15× one bare run.

    .venv/bin/python bench/prove.py [SUITE] [--full] [--sandbox local|docker]
    .venv/bin/python bench/prove.py [SUITE|TASK ...] --per-task [--versus EXE] [--repeat N]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bare import bare_env, bare_run, precompile, run_once, solved_tree, test_command

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
                     extra_env: dict[str, str] | None = None,
                     exe: str | None = None) -> tuple[float, int, dict]:
    env = {**os.environ, "ENDSTATE_AUTHOR_CACHE": str(cache), **(extra_env or {})}
    started = time.perf_counter()
    proc = subprocess.run([exe or str(BIN / "endstate-author"), "prove", *args, "-o", "json"],
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


PER_TASK_MODES = {"floor": ("--only", "visible"), "no mutants": ("--mutants", "0"), "full": ()}
"""What ``--per-task`` times for each task (each a fresh prove process, no cache)."""


def outcomes(report: dict) -> list[tuple[str, str]]:
    return sorted((c["check"], c["outcome"]) for t in report.get("tasks", [])
                  for c in t.get("checks", []))


def per_task(tasks: list[Path], sandbox: str, repeat: int, versus: str | None) -> None:
    """Each task's full prove as a multiple of one bare run (see the module docstring)."""
    exes = {"this": str(BIN / "endstate-author"), **({"versus": versus} if versus else {})}
    ratios: dict[str, list[float]] = {name: [] for name in exes}
    print(f"per task, fastest of {repeat}, x one bare run; load (1 min) beside each row; "
          + ", ".join(f"{name} = {exe}" for name, exe in exes.items()))
    header = " ".join(f"{name + ' ' + mode:>17}" for name in exes for mode in PER_TASK_MODES)
    header += " " + " ".join(f"{name + ' cpu':>14}" for name in exes)
    print(f"{'task':32} {'bare':>6} {header}  load")
    with tempfile.TemporaryDirectory(prefix="endstate-bench-prove-") as cache_dir:
        for task in tasks:
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            bare = bare_run(task)
            bare_cpu = cpu_since(before) / 10  # bare_run: one run to warm the page cache, 9
            if not bare:
                continue
            best: dict[tuple[str, str], float] = {}
            cpu: dict[str, float] = {}
            seen: dict[str, set[str]] = {name: set() for name in exes}
            for _ in range(max(1, repeat)):
                for mode, extra in PER_TASK_MODES.items():
                    for name, exe in exes.items():  # interleaved: the same load for both
                        before = resource.getrusage(resource.RUSAGE_CHILDREN)
                        wall, _, report = run_prove_report(
                            [str(task), "--sandbox", sandbox, "--no-cache", *extra],
                            Path(cache_dir), exe=exe)
                        key = (name, mode)
                        best[key] = min(best.get(key, wall), wall)
                        if mode == "full":
                            seen[name].add(str(outcomes(report)))
                            used = cpu_since(before)
                            cpu[name] = min(cpu.get(name, used), used)
            cells = " ".join(f"{best[(n, m)]:6.2f}s {best[(n, m)] / bare:6.1f}x  "
                             for n in exes for m in PER_TASK_MODES)
            cells += " ".join(f"{cpu[n]:6.2f}s {cpu[n] / bare_cpu:5.1f}x" for n in exes)
            same = "" if len(set().union(*seen.values())) == 1 else "  OUTCOMES DIFFER"
            print(f"{task.name:32} {bare:5.3f}s {cells}{os.getloadavg()[0]:5.1f}{same}",
                  flush=True)
            for name in exes:
                ratios[name].append(best[(name, "full")] / bare)
    for name, xs in ratios.items():
        if not xs:
            continue
        median, worst = statistics.median(xs), max(xs)
        met = "met" if median <= 10 and worst <= 15 else "NOT met"
        print(f"full prove / one bare run ({name}): median {median:.1f}x, worst {worst:.1f}x "
              f"over {len(xs)} tasks (target: median <= 10x, worst <= 15x: {met})")


def cpu_since(before: resource.struct_rusage) -> float:
    """CPU seconds this process's children used since ``before`` (a prove, its judges, its
    sandboxes' processes: all reaped by their parents): unlike the wall time, hardly changed
    by the machine's other load."""
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def task_roots(paths: list[str]) -> list[Path]:
    """The task folders under the suites or task folders given (fixture trees excluded)."""
    out: list[Path] = []
    for given in paths:
        out += sorted(p.parent for p in Path(given).rglob("task.json")
                      if not {"fixture", "holdout", "solution", "defects"} & set(p.parts))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("suite", nargs="*", default=[str(ROOT / "tasks")])
    parser.add_argument("--sandbox", default="local", choices=("local", "docker"))
    parser.add_argument("--full", action="store_true", help="also time every check group")
    parser.add_argument("--per-task", action="store_true",
                        help="only each task's full prove against one bare run")
    parser.add_argument("--versus", help="another endstate-author to time beside this one")
    parser.add_argument("--repeat", type=int, default=1,
                        help="--per-task: keep the fastest of this many runs")
    args = parser.parse_args()
    precompile()
    if args.per_task:
        per_task(task_roots(args.suite), args.sandbox, args.repeat, args.versus)
        return
    suite = Path(args.suite[0])
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
