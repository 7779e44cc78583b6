"""Benchmark and differential: prove with the warm runners against prove with fresh processes.

In one run, for each task given (default: every shipped task), each as a fresh process with
the cache off, in the local sandbox:

* **bare** — one run of the task's own test command on the solved tree (fixture, solution,
  holdout), as a plain subprocess (the fastest of 9), with the interpreter a version manager's shim
  on PATH would pick run directly (``bench/bare.py`` says why);
* **fresh** — ``endstate-author prove TASK --no-cache`` with ``ENDSTATE_WARM=0`` (every judge
  and every run in the sandbox a new interpreter);
* **alone** — warm, but every mutant graded alone (``ENDSTATE_MUTANT_BATCH=0``: a sandbox, a
  judge and a child per mutant, as before mutants were batched);
* **warm** — the default: the judge, and the runs in the sandbox (the judge's child,
  ``tests_pass``'s runner, ``python -m unittest``) forked from a zygote, and the mutants
  graded in batches (``endstate_author/prove/mutant_batch.py``);
* **floor** — ``prove --only visible`` warm: the fixed cost of one prove process (start,
  imports, loading the task) with a single check, the part no per-check speed-up touches;

and prints the times, the ratios to the bare run, the CPU time each prove used, and whether
every check had the same outcome all three ways (the differential: every check of every task,
every mutant included).

``--repeat N`` runs every mode N times, interleaved, and keeps each one's fastest run (on a
shared 2-core machine another process's load only ever adds time).

Target (issue "Speed, round 3"): full prove, every mutant run, ≤ 15× one bare run of the
task's test command, for ``tasks/add-markdown-table-alignment`` and as the median over the
shipped tasks.

    .venv/bin/python bench/warm.py [TASK ...] [--repeat N]
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bare import bare_run, precompile, shim_cost

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


MODES = {
    "fresh": {"ENDSTATE_WARM": "0", "ENDSTATE_MUTANT_BATCH": "1"},
    "alone": {"ENDSTATE_WARM": "1", "ENDSTATE_WARM_SANDBOX": "1", "ENDSTATE_MUTANT_BATCH": "0"},
    "warm": {"ENDSTATE_WARM": "1", "ENDSTATE_WARM_SANDBOX": "1", "ENDSTATE_MUTANT_BATCH": "1"},
}


def prove(task_root: Path, cache: Path, mode: str, extra: tuple[str, ...] = (),
          more_env: dict[str, str] | None = None) -> tuple[float, float, list[tuple[str, str]]]:
    """Wall time, CPU time (this process's children) and (check, outcome) of one prove."""
    env = {**os.environ, "ENDSTATE_AUTHOR_CACHE": str(cache), **MODES[mode], **(more_env or {})}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.run([str(BIN / "endstate-author"), "prove", str(task_root), "--sandbox",
                           "local", "--no-cache", "-o", "json", *extra],
                          env=env, capture_output=True, text=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    try:
        data = json.loads(proc.stdout)
    except ValueError:
        return wall, cpu, [("no report", f"exit {proc.returncode}")]
    return wall, cpu, [(c["check"], c["outcome"]) for t in data["tasks"] for c in t["checks"]]


def _disagreements(runs: dict[str, list[tuple[float, float, list[tuple[str, str]]]]]
                   ) -> list[str]:
    """Each check whose outcome differs between the runs: its outcome in each mode (a check
    that differs between runs of one mode is flaky, not a difference of the modes)."""
    seen: dict[str, dict[str, set[str]]] = {}
    for mode in ("fresh", "alone", "warm"):
        for _wall, _cpu, pairs in runs[mode]:
            for check, outcome in pairs:
                seen.setdefault(check, {}).setdefault(mode, set()).add(outcome)
    lines = []
    for check, by_mode in sorted(seen.items()):
        if len({o for outs in by_mode.values() for o in outs}) > 1 or len(by_mode) < 3:
            shown = ", ".join(f"{m} {'/'.join(sorted(o))}" for m, o in by_mode.items())
            lines.append(f"{check}: {shown}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tasks", nargs="*")
    parser.add_argument("--repeat", type=int, default=1,
                        help="run each mode this many times, interleaved; keep the fastest "
                             "(a shared machine's load only ever adds time)")
    args = parser.parse_args()
    precompile()
    tasks = [Path(t) for t in args.tasks] or sorted(
        p.parent for p in (ROOT / "tasks").glob("*/task.json"))
    rows = []
    different = []
    print(shim_cost(tasks[0]), flush=True)
    with tempfile.TemporaryDirectory(prefix="endstate-bench-warm-") as cache_dir:
        for task in tasks:
            runs: dict[str, list[tuple[float, float, list[tuple[str, str]]]]] = {
                m: [] for m in ("bare", "fresh", "alone", "warm", "floor")}
            for _ in range(max(1, args.repeat)):
                runs["bare"].append((bare_run(task), 0.0, []))
                for mode in ("fresh", "alone", "warm"):
                    runs[mode].append(prove(task, Path(cache_dir), mode))
                runs["floor"].append(prove(task, Path(cache_dir), "warm", ("--only", "visible")))
            bare, _, _ = min(runs["bare"])
            fresh, fresh_cpu, _ = min(runs["fresh"])
            judge, judge_cpu, _ = min(runs["alone"])
            warm, warm_cpu, warm_out = min(runs["warm"])
            floor, _, _ = min(runs["floor"])
            outcomes = {str(sorted(r[2])) for m in ("fresh", "alone", "warm") for r in runs[m]}
            if len(outcomes) != 1:
                different.append(task.name)
                for line in _disagreements(runs):
                    print(f"  {task.name}: {line}")
            rows.append((task.name, bare, fresh, fresh_cpu, judge, judge_cpu, warm, warm_cpu,
                         floor, len(warm_out)))
    print(f"{'task':32} {'bare':>6} {'fresh':>6} {'x':>6} {'cpu':>6} {'alone':>6} {'x':>6} "
          f"{'cpu':>6} {'warm':>6} {'x':>6} {'cpu':>6} {'floor':>6} {'x':>5} checks")
    for name, bare, fresh, fcpu, judge, jcpu, warm, wcpu, floor, n in rows:
        def x(t: float, bare: float = bare) -> str:
            return f"{t / bare if bare else 0:5.1f}x"
        print(f"{name:32} {bare:5.3f}s {fresh:5.2f}s {x(fresh)} {fcpu:5.2f}s {judge:5.2f}s "
              f"{x(judge)} {jcpu:5.2f}s {warm:5.2f}s {x(warm)} {wcpu:5.2f}s {floor:5.2f}s "
              f"{x(floor)} {n}")
    with_bare = [r for r in rows if r[1]]
    if with_bare:
        def med(i: int) -> float:
            return statistics.median(float(r[i]) / float(r[1]) for r in with_bare)
        print(f"median over {len(with_bare)} tasks, x one bare run: fresh {med(2):.1f}x, "
              f"mutants alone {med(4):.1f}x, warm and batched {med(6):.1f}x (target <= 15x); "
              f"floor (one check) {med(8):.1f}x")
    checks = sum(r[-1] for r in rows)
    print(f"differential, {checks} checks of {len(rows)} tasks: "
          + ("every outcome the same fresh, mutants alone, and warm and batched"
             if not different
             else f"outcomes DIFFER for {', '.join(different)}"))

if __name__ == "__main__":
    main()
