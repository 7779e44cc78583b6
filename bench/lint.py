"""Benchmark: `endstate-author lint` over a 1,000-task suite vs check-jsonschema.

The suite is generated from the shipped tasks (each copied under a new id until there are
N tasks). Every tool runs as a fresh process, alternately, several times; the medians and
their ratios are printed:

- check-jsonschema over the same task.json files (the reference);
- cold lint: ``--no-cache``, every rule on every task (target ≤ 1.0× check-jsonschema);
- warm lint: the persistent cache filled by an earlier run over the unchanged suite, in a
  cache folder of this run's own (target ≤ 0.25× check-jsonschema's cold time).

Both lints must print the same findings (checked). Targets: issue 16, and the lines under
"issue 'Speed, round 3'": one task's lint and the pre-commit hook on one changed task, each
against a bare interpreter's start (≤ 10×), cold lint against the parse-only floor (≤ 2.0×),
warm lint against check-jsonschema (≤ 0.25×).

Two more lines say where the cold target stands: a bare interpreter that reads every task.json
and parses, on every core, the same Python files the rules parse (the work no linter of
tests can skip), and lint's own start-up (one task). Their sum against check-jsonschema is
what a cold lint costs before its first rule runs.

    .venv/bin/python bench/lint.py [--tasks 1000] [--rounds 5]
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bare import precompile

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def build_suite(target: Path, count: int) -> list[Path]:
    sources = sorted(p.parent for p in (ROOT / "tasks").glob("*/task.json"))
    if not sources:
        sys.exit("bench/lint.py: no shipped tasks under tasks/")
    manifests = []
    for i in range(count):
        source = sources[i % len(sources)]
        task_id = f"{source.name}-{i:04d}"
        dest = target / task_id
        shutil.copytree(source, dest, symlinks=True)
        data = json.loads((dest / "task.json").read_text())
        data["id"] = task_id
        (dest / "task.json").write_text(json.dumps(data, indent=2) + "\n")
        manifests.append(dest / "task.json")
    return manifests


def parsed_by_lint(suite: Path) -> list[str]:
    """The Python files lint's rules parse on ``suite`` (every ``python_module`` asked for),
    found by linting it once in this process with that method watched."""
    from endstate_author.engine.context import TaskContext
    from endstate_author.lint import run as lint

    seen: set[str] = set()
    original = TaskContext.python_module

    def watched(self: TaskContext, name: str, rel: str) -> object:
        seen.add(str(self.root / name / rel))
        return original(self, name, rel)

    TaskContext.python_module = watched  # type: ignore[method-assign]
    parallel, lint.PARALLEL_MIN_TASKS = lint.PARALLEL_MIN_TASKS, 1 << 30  # all in this process
    try:
        lint.lint_paths([suite], isolated=True)
    finally:
        TaskContext.python_module = original  # type: ignore[method-assign]
        lint.PARALLEL_MIN_TASKS = parallel
    return sorted(seen)


PARSE_FLOOR = """
import ast, json, os, sys
files = open(sys.argv[1]).read().split("\\n")
manifests = open(sys.argv[2]).read().split("\\n")
workers = int(sys.argv[3])
mine = files[0::workers]
pids = []
for i in range(1, workers):
    pid = os.fork()
    if pid == 0:
        for f in files[i::workers]:
            with open(f, "rb") as h:
                ast.parse(h.read())
        os._exit(0)
    pids.append(pid)
for f in mine:
    with open(f, "rb") as h:
        ast.parse(h.read())
for m in manifests:
    with open(m, "rb") as h:
        json.loads(h.read())
for pid in pids:
    os.waitpid(pid, 0)
"""
"""A bare interpreter (nothing of ours imported) that reads every task.json and parses, on
every core, exactly the files lint's rules parse: what no linter that reads the tests can
avoid, before it imports itself or runs a rule."""


def timed(argv: list[str], env: dict[str, str] | None = None) -> tuple[float, int]:
    started = time.perf_counter()
    proc = subprocess.run(
        argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env
    )
    elapsed = time.perf_counter() - started
    if proc.returncode not in (0, 1):
        sys.exit(f"bench/lint.py: {argv[0]} failed ({proc.returncode}): {proc.stderr[-500:]}")
    return elapsed, proc.returncode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    precompile()  # an installed package carries its bytecode (check-jsonschema's does)
    schema = ROOT / "endstate_author" / "data" / "task.schema.json"
    with tempfile.TemporaryDirectory(prefix="endstate-bench-lint-") as tmp:
        suite = Path(tmp) / "suite"
        manifests = build_suite(suite, args.tasks)
        env = {**os.environ, "ENDSTATE_AUTHOR_LINT_CACHE": str(Path(tmp) / "cache")}
        lint_argv = [str(BIN / "endstate-author"), "lint", str(suite), "--isolated", "-o", "json"]
        cold_argv = [*lint_argv, "--no-cache"]
        schema_argv = [str(BIN / "check-jsonschema"), "--schemafile", str(schema),
                       *map(str, manifests)]
        # warm the OS file cache for all (cold = fresh process, not cold disk); the first
        # cached run fills the cache
        first_fill = timed(lint_argv, env)[0]
        timed(cold_argv, env)
        timed(schema_argv)
        one_argv = [*schema_argv[:3], str(manifests[0])]
        times: dict[str, list[float]] = {"cold": [], "warm": [], "schema": [], "one": []}
        for _ in range(args.rounds):
            times["cold"].append(timed(cold_argv, env)[0])
            times["schema"].append(timed(schema_argv)[0])
            times["warm"].append(timed(lint_argv, env)[0])
            times["one"].append(timed(one_argv)[0])
        med = {k: statistics.median(v) for k, v in times.items()}
        cold_out = subprocess.run(cold_argv, capture_output=True, text=True, env=env).stdout
        warm_out = subprocess.run(lint_argv, capture_output=True, text=True, env=env).stdout
        if cold_out != warm_out:
            sys.exit("bench/lint.py: the cached lint printed other findings than the cold one")
        count = len(json.loads(cold_out)) if cold_out.strip() else 0
        parsed = parsed_by_lint(suite)
        lists = Path(tmp) / "parsed.txt", Path(tmp) / "manifests.txt"
        lists[0].write_text("\n".join(parsed))
        lists[1].write_text("\n".join(map(str, manifests)))
        floor_argv = [sys.executable, "-c", PARSE_FLOOR, *map(str, lists), str(os.cpu_count())]
        one_lint_argv = [*lint_argv[:2], str(manifests[0].parent), *cold_argv[3:]]
        # the pre-commit hook as pre-commit calls it: the changed files of one task
        changed = [str(manifests[0]), str(manifests[0].parent / "prompt.md")]
        hook_argv = [sys.executable, "-m", "endstate_author.hooks", "lint", *changed]
        bare_argv = [sys.executable, "-c", "pass"]
        floors, starts, hooks, bares = [], [], [], []
        for n in range(args.rounds):
            floors.append(timed(floor_argv)[0])
            starts.append(timed(one_lint_argv, env)[0])
            # an empty cache of its own each time: the hook's first run on a changed task
            hook_env = {**env, "ENDSTATE_AUTHOR_LINT_CACHE": str(Path(tmp) / f"hook-{n}")}
            hooks.append(timed(hook_argv, hook_env)[0])
            bares.append(timed(bare_argv)[0])
    print(f"suite: {args.tasks} tasks, {args.rounds} rounds, fresh process each run, "
          f"{os.cpu_count()} CPUs")
    print(f"check-jsonschema        median {med['schema']:.3f} s  "
          f"(min {min(times['schema']):.3f} s)")
    print(f"check-jsonschema, 1 file median {med['one']:.3f} s  (its start-up: "
          f"{med['one'] / med['schema']:.0%} of the 1,000-file run)")
    print(f"lint cold (--no-cache)  median {med['cold']:.3f} s  (min {min(times['cold']):.3f} s)  "
          f"findings: {count}")
    print(f"lint warm (cache hit)   median {med['warm']:.3f} s  (min {min(times['warm']):.3f} s)  "
          f"same output: yes")
    print(f"lint filling the cache  {first_fill:.3f} s (one run, empty cache)")
    floor, start = statistics.median(floors), statistics.median(starts)
    print(f"floor, parse only       median {floor:.3f} s  (a bare interpreter reading every "
          f"task.json and parsing the {len(parsed)} .py files the rules parse, on "
          f"{os.cpu_count()} cores: {floor / med['schema']:.2f}x check-jsonschema)")
    print(f"lint of one task        median {start:.3f} s  (start-up and imports: "
          f"{start / med['schema']:.2f}x check-jsonschema)")
    print(f"the two together: {(floor + start) / med['schema']:.2f}x check-jsonschema before "
          "any rule runs")
    print(f"ratio cold / check-jsonschema: {med['cold'] / med['schema']:.2f}x  (target <= 1.0x)")
    print(f"ratio warm / check-jsonschema: {med['warm'] / med['schema']:.2f}x  (target <= 0.25x)")
    bare, hook = statistics.median(bares), statistics.median(hooks)
    print("issue 'Speed, round 3':")
    print(f"  bare interpreter start (python -c pass)  median {bare * 1000:.1f} ms")
    print(f"  lint of one task, fresh, no cache        {start * 1000:.1f} ms = "
          f"{start / bare:.1f}x the bare start  (target <= 10x)")
    print(f"  the pre-commit hook, one changed task    {hook * 1000:.1f} ms = "
          f"{hook / bare:.1f}x the bare start  (target <= 10x)")
    print(f"  cold / the floor line                    {med['cold'] / floor:.2f}x  "
          "(target <= 2.0x)")
    print(f"  warm / check-jsonschema                  {med['warm'] / med['schema']:.2f}x  "
          "(target <= 0.25x)")


if __name__ == "__main__":
    main()
