"""Benchmark: a full prove in the Docker sandbox against the same prove in the local sandbox.

In one run, on the same suite (the shipped tasks/ by default; a task folder works too), each
as a fresh process with the cache off and the default jobs:
``endstate-author prove SUITE --sandbox local --no-cache``, the same with ``--sandbox docker``
and every check in a container of its own (``ENDSTATE_SANDBOX_REUSE=0``, as before the pool),
with containers reused but every command a ``docker exec`` of its own
(``ENDSTATE_SANDBOX_RUNNER=0``, as before the runner inside the container), and with
``--sandbox docker`` as shipped (containers reset and reused, commands started by the runner
in the container, Python runs forked from its warm interpreters). Prints the wall times, the
ratios to local, the containers each Docker run created (polled by the owner-pid label) and
whether every check had the same outcome in all four.

Target (issue "Speed"): Docker ≤ 1.5× local.

    .venv/bin/python bench/prove_docker.py [SUITE_OR_TASK ...] [--only GROUP ...]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
PID_LABEL = "endstate-author.pid"


def run_prove(args: list[str], cache: Path, **extra: str) -> tuple[float, int, str, int]:
    """Wall time, exit status, stdout, and how many sandbox containers the run made (polled
    from the daemon by the owner-pid label while it runs)."""
    env = {**os.environ, "ENDSTATE_AUTHOR_CACHE": str(cache), **extra}
    started = time.perf_counter()
    proc = subprocess.Popen([str(BIN / "endstate-author"), "prove", *args, "-o", "json"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    seen: set[str] = set()
    done = threading.Event()

    def poll() -> None:
        while not done.is_set():
            listing = subprocess.run(
                ["docker", "ps", "-aq", "--no-trunc", "--filter", f"label={PID_LABEL}={proc.pid}"],
                capture_output=True, text=True)
            seen.update(listing.stdout.split())
            done.wait(0.2)

    watcher = threading.Thread(target=poll, daemon=True)
    watcher.start()
    stdout, _ = proc.communicate()
    elapsed = time.perf_counter() - started
    done.set()
    watcher.join()
    return elapsed, proc.returncode, stdout, len(seen)


def outcomes(stdout: str) -> list[tuple[str, str, str]]:
    try:
        data = json.loads(stdout)
    except ValueError:
        return []
    rows = []
    for task in data.get("tasks", []):
        for check in task.get("checks", []):
            rows.append((task.get("task", ""), check.get("check", ""), check.get("outcome", "")))
    return sorted(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("suite", nargs="*", default=[str(ROOT / "tasks")],
                        help="suites or task folders (default: the shipped tasks/)")
    parser.add_argument("--only", action="append", default=[])
    args = parser.parse_args()
    only = [x for group in args.only for x in ("--only", group)]
    with tempfile.TemporaryDirectory(prefix="endstate-bench-docker-") as cache_dir:
        cache = Path(cache_dir)
        common = [*args.suite, "--no-cache", *only]
        local, local_rc, local_out, _ = run_prove([*common, "--sandbox", "local"], cache)
        each, each_rc, each_out, each_creates = run_prove(
            [*common, "--sandbox", "docker"], cache, ENDSTATE_SANDBOX_REUSE="0"
        )
        execs, execs_rc, execs_out, execs_creates = run_prove(
            [*common, "--sandbox", "docker"], cache, ENDSTATE_SANDBOX_RUNNER="0"
        )
        pooled, pooled_rc, pooled_out, pooled_creates = run_prove(
            [*common, "--sandbox", "docker"], cache
        )
    same = (outcomes(local_out) == outcomes(each_out) == outcomes(execs_out)
            == outcomes(pooled_out))
    print(f"suite: {' '.join(args.suite)}, full prove{' ' + ' '.join(only) if only else ''}, "
          f"default jobs, no cache, {len(outcomes(local_out))} checks")
    print(f"local sandbox                      {local:8.2f} s  (exit {local_rc})")
    print(f"docker, a container per check      {each:8.2f} s  (exit {each_rc}, "
          f"{each_creates} containers)  {each / local:5.2f}x local")
    print(f"docker, reused, an exec a command  {execs:8.2f} s  (exit {execs_rc}, "
          f"{execs_creates} containers)  {execs / local:5.2f}x local")
    print(f"docker as shipped (runner inside)  {pooled:8.2f} s  (exit {pooled_rc}, "
          f"{pooled_creates} containers)  {pooled / local:5.2f}x local  (target <= 1.5x)")
    print(f"same outcome for every check in all four: {'yes' if same else 'NO'}")


if __name__ == "__main__":
    main()
