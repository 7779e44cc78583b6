"""Benchmark: a judge and its child on one CPU (the default) against both placed by the
scheduler (``ENDSTATE_PAIR_CPU=0``), side by side.

First the reason, on this machine: a round trip of one byte over a socket pair between two
processes, free to run on any CPU, and both held to one CPU. The judge and its child take
turns in exactly this way (a request, its answer, about seventeen a mutant).

Then, for each task given (default: every shipped task), ``endstate-author prove TASK
--sandbox local --no-cache`` as a fresh process, paired and apart alternately, ``--repeat``
times each (the fastest kept: another process's load only ever adds time), with the wall and
CPU time of each and whether every check had the same outcome both ways. The median over the
tasks of paired / apart is the figure (``endstate_harness.graders.judge.launch.shared_cpu``
says why pairing helps; issue "Speed, round 3").

    .venv/bin/python bench/pairing.py [TASK ...] [--repeat N]
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bare import precompile
from warm import prove

ROOT = Path(__file__).resolve().parent.parent
EXCHANGES = 2000


def round_trip_us(cpus: set[int] | None) -> float:
    """Microseconds per one-byte round trip between this process and a forked one, both on
    ``cpus`` (None: wherever the scheduler puts them)."""
    mine, theirs = socket.socketpair()
    allowed = os.sched_getaffinity(0)
    pid = os.fork()
    if pid == 0:
        mine.close()
        if cpus is not None:
            os.sched_setaffinity(0, cpus)
        for _ in range(EXCHANGES):
            theirs.sendall(theirs.recv(1))
        os._exit(0)
    theirs.close()
    try:
        if cpus is not None:
            os.sched_setaffinity(0, cpus)
        started = time.perf_counter()
        for _ in range(EXCHANGES):
            mine.sendall(b"x")
            mine.recv(1)
        return (time.perf_counter() - started) / EXCHANGES * 1e6
    finally:
        os.sched_setaffinity(0, allowed)
        os.waitpid(pid, 0)
        mine.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tasks", nargs="*")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    allowed = sorted(os.sched_getaffinity(0))
    if len(allowed) < 2:
        sys.exit("bench/pairing.py: this process may use one CPU only: nothing to compare")
    precompile()
    free = statistics.median(round_trip_us(None) for _ in range(3))
    one = statistics.median(round_trip_us({allowed[-1]}) for _ in range(3))
    print(f"socket-pair round trip: {free:.1f} us free on {len(allowed)} CPUs, "
          f"{one:.1f} us both on one CPU", flush=True)
    tasks = [Path(t) for t in args.tasks] or sorted(
        p.parent for p in (ROOT / "tasks").glob("*/task.json"))
    ratios, different = [], []
    print(f"{'task':34s} {'apart':>7s} {'cpu':>6s} {'paired':>7s} {'cpu':>6s}  ratio")
    with tempfile.TemporaryDirectory(prefix="endstate-bench-pairing-") as cache:
        for task in tasks:
            runs: dict[bool, list[tuple[float, float, list[tuple[str, str]]]]] = {
                False: [], True: []}
            for _ in range(max(1, args.repeat)):
                for paired in (False, True):
                    pair_env = {"ENDSTATE_PAIR_CPU": "1" if paired else "0"}
                    runs[paired].append(prove(task, Path(cache), "warm", more_env=pair_env))
            apart, apart_cpu, apart_out = min(runs[False])
            paired_wall, paired_cpu, paired_out = min(runs[True])
            if sorted(apart_out) != sorted(paired_out):
                different.append(task.name)
            ratios.append(paired_wall / apart)
            print(f"{task.name:34s} {apart:6.2f}s {apart_cpu:5.2f}s {paired_wall:6.2f}s "
                  f"{paired_cpu:5.2f}s  {paired_wall / apart:.2f}", flush=True)
    print(f"median over {len(tasks)} tasks, paired / apart: {statistics.median(ratios):.3f} "
          f"(best {min(ratios):.2f}, worst {max(ratios):.2f})")
    print("same outcome for every check both ways: " +
          ("yes" if not different else "no: " + ", ".join(different)))


if __name__ == "__main__":
    main()
