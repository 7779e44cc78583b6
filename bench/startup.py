"""Benchmark: prove's start-up, one check against one bare run of the tests it grades.

Issue 48, target 1: ``endstate-author prove --only visible TASK`` (one check, a fresh
process, no cache) costs at most 3x one bare run of the task's visible tests in a fresh
interpreter. Why this pair: the check is one grading of the untouched fixture, the run of
those very tests, so whatever prove costs beyond the bare run is its own start (imports,
options, the sandbox and the judge) and its report; that is what this measures.

For each task, side by side in one run and interleaved (bare, prove, bare, prove, ...), so
that the machine's load falls on both alike:

* **bare** -- the task's test command (``bench/bare.py``: the interpreter run directly, not
  through a version manager's shim) on a plain copy of the fixture, as shipped;
* **prove** -- ``endstate-author prove --only visible --no-cache --sandbox local TASK`` as a
  fresh process, its report (the text table) read from a pipe. The local sandbox, as the
  issue measured it: Docker's start is another target's (``bench/prove_docker.py``).

Each is the median of ``--repeat`` runs (at least 5); the ratio is prove's median over
bare's. Also printed: what importing prove's command costs a fresh interpreter (``python -c
"import endstate_author.cli.prove_command"`` over ``python -c pass``), and the load average
before and after. Only tasks whose visible check runs are measured (a refactor or
permissioning task skips it: that would time the start alone).

    .venv/bin/python bench/startup.py [TASK ...] [--repeat N]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bare import bare_env, precompile, run_once, test_command

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
TARGET = 3.0
DEFAULT_TASKS = ("fix-help-text-wrap", "fix-semver-precedence", "add-temperature-units",
                 "cost-slugify-accents", "recover-journal-store")  # fmt: skip
COMMAND_MODULE = "endstate_author.cli.prove_command"
"""prove's command without typer (before it existed: ``cli.cmd_prove``, which is measured)."""
SKIPPING = ("refactor", "permissioning")
"""Categories whose visible check is skipped (``prove/checks/visible.py``: EXEMPT)."""


def prove_once(task: Path, env: dict[str, str]) -> tuple[float, int]:
    started = time.perf_counter()
    proc = subprocess.run(
        [str(BIN / "endstate-author"), "prove", "--only", "visible", "--no-cache",
         "--sandbox", "local", str(task)],
        env=env, capture_output=True)
    return time.perf_counter() - started, proc.returncode


def import_cost(repeat: int) -> tuple[float, float]:
    """Median wall of a fresh interpreter importing prove's command, and of one that imports
    nothing, in seconds."""
    python = str(BIN / "python")
    found = subprocess.run([python, "-c", f"import {COMMAND_MODULE}"], capture_output=True)
    module = COMMAND_MODULE if found.returncode == 0 else "endstate_author.cli.cmd_prove"
    cost: list[float] = []
    bare: list[float] = []
    for _ in range(repeat):
        for stmt, into in ((f"import {module}", cost), ("pass", bare)):
            started = time.perf_counter()
            subprocess.run([python, "-c", stmt], check=True)
            into.append(time.perf_counter() - started)
    return statistics.median(cost), statistics.median(bare)


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"load {one:.2f} (1 min), {five:.2f} (5 min), {os.cpu_count()} cores"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tasks", nargs="*", default=list(DEFAULT_TASKS),
                        help="task names under tasks/, or task folders")
    parser.add_argument("--repeat", type=int, default=7, help="runs of each (at least 5)")
    args = parser.parse_args()
    repeat = max(5, args.repeat)
    precompile()
    print(f"before: {load()}")
    roots = [Path(t) if Path(t).is_dir() else ROOT / "tasks" / t for t in args.tasks]
    ratios: dict[str, tuple[float, float, float]] = {}
    with tempfile.TemporaryDirectory(prefix="endstate-bench-startup-") as tmp:
        env = {**os.environ, "ENDSTATE_AUTHOR_CACHE": str(Path(tmp) / "cache")}
        plans = []
        for root in roots:
            manifest = json.loads((root / "task.json").read_text())
            command = test_command(manifest)
            if command is None or manifest.get("category") in SKIPPING:
                print(f"{root.name}: skipped (its visible check does not run)")
                continue
            tree = Path(tmp) / root.name
            shutil.copytree(root / "fixture", tree, symlinks=True)
            plans.append((root, command, tree))
            run_once(command, tree, bare_env(tmp))  # page cache warm for both
            prove_once(root, env)
        times: dict[str, tuple[list[float], list[float]]] = {r.name: ([], []) for r, _, _ in plans}
        for _ in range(repeat):
            for root, command, tree in plans:
                bare, prove = times[root.name]
                bare.append(run_once(command, tree, bare_env(tmp)))
                seconds, status = prove_once(root, env)
                if status not in (0, 1):
                    print(f"{root.name}: prove exited {status}", file=sys.stderr)
                prove.append(seconds)
        for name, (bare, prove) in times.items():
            b, p = statistics.median(bare), statistics.median(prove)
            ratios[name] = (b, p, p / b)
    print(f"{'task':32} {'bare':>8} {'prove':>8} {'ratio':>6}   (median of {repeat}, interleaved)")
    for name, (b, p, r) in ratios.items():
        print(f"{name:32} {b * 1000:6.0f}ms {p * 1000:6.0f}ms {r:5.2f}x")
    if not ratios:
        print("no task measured")
        return 1
    worst = max(r for _, _, r in ratios.values())
    median = statistics.median(r for _, _, r in ratios.values())
    cost, nothing = import_cost(repeat)
    print(f"imports: a fresh interpreter importing prove's command {cost * 1000:.0f} ms, "
          f"one importing nothing {nothing * 1000:.0f} ms")
    print(f"prove --only visible vs one bare run: median {median:.2f}x, worst {worst:.2f}x")
    met = worst <= TARGET
    print(f"target ≤ {TARGET:g}× (every task): {'met' if met else 'not met'}")
    print(f"after: {load()}")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
