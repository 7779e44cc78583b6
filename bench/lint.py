"""Benchmark: a cold `endstate-author lint` over a 1,000-task suite vs check-jsonschema.

The suite is generated from the shipped tasks (each copied under a new id until there are
N tasks). Both tools run as fresh processes over the same task.json files, alternately,
several times; the medians and their ratio are printed. Targets (issue "Foundation"):
lint ≤ 1.0× check-jsonschema, and under 2 s wall on a 2-core machine.

    .venv/bin/python bench/lint.py [--tasks 1000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

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


def timed(argv: list[str]) -> tuple[float, int]:
    started = time.perf_counter()
    proc = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    elapsed = time.perf_counter() - started
    if proc.returncode not in (0, 1):
        sys.exit(f"bench/lint.py: {argv[0]} failed ({proc.returncode}): {proc.stderr[-500:]}")
    return elapsed, proc.returncode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    schema = ROOT / "endstate_author" / "data" / "task.schema.json"
    with tempfile.TemporaryDirectory(prefix="endstate-bench-lint-") as tmp:
        suite = Path(tmp) / "suite"
        manifests = build_suite(suite, args.tasks)
        lint_argv = [str(BIN / "endstate-author"), "lint", str(suite), "--isolated", "-o", "json"]
        schema_argv = [str(BIN / "check-jsonschema"), "--schemafile", str(schema),
                       *map(str, manifests)]
        timed(lint_argv)  # warm the OS file cache for both (cold = fresh process, not cold disk)
        timed(schema_argv)
        lint_times, schema_times = [], []
        for _ in range(args.rounds):
            lint_times.append(timed(lint_argv)[0])
            schema_times.append(timed(schema_argv)[0])
        lint_med = statistics.median(lint_times)
        schema_med = statistics.median(schema_times)
        findings = subprocess.run(lint_argv, capture_output=True, text=True).stdout
        count = len(json.loads(findings)) if findings.strip() else 0
    print(f"suite: {args.tasks} tasks, {args.rounds} rounds, fresh process each run")
    print(f"endstate-author lint  median {lint_med:.3f} s  (min {min(lint_times):.3f} s)  "
          f"findings: {count}")
    print(f"check-jsonschema      median {schema_med:.3f} s  (min {min(schema_times):.3f} s)")
    print(f"ratio lint / check-jsonschema: {lint_med / schema_med:.2f}x  (target <= 1.0x, "
          f"lint < 2 s: {'yes' if lint_med < 2 else 'no'})")


if __name__ == "__main__":
    main()
