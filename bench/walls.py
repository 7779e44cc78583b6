"""Benchmark: local prove of a suite with walls (bubblewrap) against without, side by side.

In one run, for the suite given (default: the shipped tasks/), each as a fresh process with the
cache off, in the local sandbox, interleaved:

* **walls** — ``endstate-author prove SUITE --sandbox local --no-cache`` (the default: every
  command, and every run forked from a warm interpreter, behind bubblewrap);
* **no walls** — the same with ``ENDSTATE_WALLS=0``;

and prints each one's fastest wall time of ``--repeat N`` (on a shared machine another
process's load only ever adds time), the ratio walls / no walls, and whether every check had
the same outcome both ways (the differential: every check of every task).

Target (issue 27): the ratio ≤ 1.3.

    .venv/bin/python bench/walls.py [SUITE] [--repeat N]
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

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
MODES = {"walls": "1", "no walls": "0"}


def prove(suite: Path, walls: str) -> tuple[float, dict[tuple[str, str], str]]:
    """Wall time and (task, check) -> outcome of one prove."""
    with tempfile.TemporaryDirectory(prefix="endstate-bench-walls-") as cache:
        env = {**os.environ, "ENDSTATE_AUTHOR_CACHE": cache, "ENDSTATE_WALLS": walls}
        started = time.perf_counter()
        proc = subprocess.run(
            [str(BIN / "endstate-author"), "prove", str(suite), "--sandbox", "local",
             "--no-cache", "--output-format", "json"],
            capture_output=True, text=True, env=env, check=False,
        )
        seconds = time.perf_counter() - started
    if proc.returncode not in (0, 1):
        sys.exit(f"prove failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    document = json.loads(proc.stdout)
    outcomes = {(t["task"], c["check"]): c["outcome"] for t in document["tasks"]
                for c in t["checks"]}
    header = proc.stderr.splitlines()[0] if proc.stderr else ""
    expected = "walled by bubblewrap" if walls == "1" else "no walls"
    if expected not in header:
        sys.exit(f"the run did not say {expected!r}: {header}")
    return seconds, outcomes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("suite", nargs="?", type=Path, default=ROOT / "tasks")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    best: dict[str, float] = {}
    outcomes: dict[str, dict[tuple[str, str], str]] = {}
    for round_ in range(args.repeat):
        for name, flag in MODES.items():
            seconds, seen = prove(args.suite, flag)
            best[name] = min(best.get(name, seconds), seconds)
            outcomes.setdefault(name, seen)
            print(f"round {round_ + 1}: {name:9} {seconds:6.2f} s", flush=True)
    walled, bare = best["walls"], best["no walls"]
    same = outcomes["walls"] == outcomes["no walls"]
    checks = len(outcomes["walls"])
    print(f"\nfastest of {args.repeat}: walls {walled:.2f} s, no walls {bare:.2f} s; "
          f"ratio {walled / bare:.2f}x (target <= 1.3x: "
          f"{'met' if walled / bare <= 1.3 else 'NOT MET'}); "
          f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"differential: {checks} checks, "
          + ("every outcome the same both ways" if same else "OUTCOMES DIFFER"))
    if not same:
        for key in sorted(set(outcomes["walls"]) | set(outcomes["no walls"])):
            a, b = outcomes["walls"].get(key), outcomes["no walls"].get(key)
            if a != b:
                print(f"  {key[0]} / {key[1]}: walls {a}, no walls {b}")
        sys.exit(1)


if __name__ == "__main__":
    main()
