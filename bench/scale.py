"""Benchmark: the local pool against a 2-node local Ray cluster, and what a big run would take.

In one run, on the same suite (the shipped tasks/ by default) and the same checks
(``--only directions``, local sandbox, no cache):

* **local** — ``endstate-author prove`` with the local pool (``--jobs 2``), a fresh process;
* **ray** — the same with ``--executor ray --address`` on a cluster of two nodes started
  here (a head and a worker, one CPU each, loopback), also a fresh process (its connect time
  counted: it is part of what a user waits for). The cluster's own start-up is not counted.

Prints both wall times and their ratio (target: ray ≤ 1.2× local on one machine, where Ray
can only add overhead). Then an oracle eval of a few tasks on the cluster gives the measured
cost of one eval attempt's sandbox work, and from the measured per-unit costs it writes an
estimate of the wall time of 1,000 tasks × 3 models on N nodes (the model's own time per
attempt is an input, ``--model-s``, since no model answers here).

    .venv/bin/python bench/scale.py [SUITE] [--model-s 60] [--slots 4]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"  # Ray on loopback (before it is imported)
import ray
from ray.cluster_utils import Cluster

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests.support

from tests.support import raycluster

ROOT = Path(__file__).resolve().parent.parent
CLI = [sys.executable, "-m", "endstate_author"]


def timed(args: list[str], cache: Path) -> tuple[float, dict]:
    env = {**os.environ, "ENDSTATE_AUTHOR_CACHE": str(cache)}
    started = time.perf_counter()
    proc = subprocess.run(args, capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - started
    if proc.returncode not in (0, 1):
        sys.exit(f"failed ({proc.returncode}): {' '.join(args)}\n{proc.stderr[-2000:]}")
    return seconds, json.loads(proc.stdout) if proc.stdout.strip().startswith("{") else {}


def start_cluster() -> Cluster:
    """A head and a worker node; retried, since a busy machine can be slow to start one."""
    try:
        return raycluster.start_cluster(
            3, lambda n, exc: print(f"cluster start {n + 1} failed: {exc}", file=sys.stderr)
        )
    except RuntimeError as exc:
        sys.exit(str(exc))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("suite", nargs="?", default=str(ROOT / "tasks"))
    parser.add_argument("--model-s", type=float, default=60.0, help="model time per attempt")
    parser.add_argument("--slots", type=int, default=4, help="attempts at once per node")
    args = parser.parse_args()
    prove = [*CLI, "prove", args.suite, "--only", "directions", "--sandbox", "local"]
    prove += ["-o", "json", "--jobs", "2"]  # each run has an empty cache of its own
    with tempfile.TemporaryDirectory(prefix="endstate-bench-scale-") as tmp:
        local_s, local = timed(prove, Path(tmp) / "a")
        cluster = start_cluster()
        try:
            remote = [*prove, "--executor", "ray", "--address", cluster.address]
            ray_s, on_ray = timed(remote, Path(tmp) / "b")
            # again, every task answered from the cache: what is left is start-up + connect
            connect_s, _ = timed(remote, Path(tmp) / "b")
            out = Path(tmp) / "eval"
            ids = sorted(p.parent.name for p in Path(args.suite).glob("*/task.json"))[:4]
            eval_args = [
                *CLI,
                "eval",
                args.suite,
                "--provider",
                "oracle",
                "--sandbox",
                "local",
                "--out",
                str(out),
                "--executor",
                "ray",
                "--address",
                cluster.address,
            ]
            for task_id in ids:
                eval_args += ["--task", task_id]
            eval_s, _ = timed(eval_args, Path(tmp) / "d")
            runs = json.loads((out / "results.json").read_text())["results"]
        finally:
            ray.shutdown()
            raycluster.stop_cluster(cluster)
    tasks = len(local.get("tasks", []))
    same = [t["checks"] for t in local["tasks"]] == [t["checks"] for t in on_ray["tasks"]] or all(
        [(c["check"], c["outcome"]) for c in a["checks"]]
        == [(c["check"], c["outcome"]) for c in b["checks"]]
        for a, b in zip(local["tasks"], on_ray["tasks"], strict=True)
    )
    work = sum(c["seconds"] for t in on_ray["tasks"] for c in t["checks"])
    print(f"suite: {args.suite} ({tasks} tasks, --only directions, local sandbox)")
    print(f"  local pool (--jobs 2)        {local_s:7.1f} s")
    print(f"  ray, 2 nodes x 1 CPU         {ray_s:7.1f} s   (start-up + connect {connect_s:.1f} s)")
    print(f"  overhead ratio ray/local     {ray_s / local_s:7.2f}x   (target <= 1.20x)")
    print(f"  same outcomes                {same}")
    per_task = work / max(1, tasks)
    dispatch = max(0.0, (ray_s - connect_s) - work / 2) / max(1, tasks)
    attempt = sum(r["wall_clock_s"] for r in runs) / max(1, len(runs))
    print(
        f"measured: {per_task:.2f} s of checks per task (directions), "
        f"{attempt:.2f} s sandbox+grading per oracle attempt, "
        f"~{dispatch:.2f} s cluster overhead per unit beyond the work, eval of "
        f"{len(runs)} attempts {eval_s:.1f} s"
    )
    units = 1000 * 3
    unit_s = attempt + args.model_s
    print(
        f"estimate: 1,000 tasks x 3 models = {units} attempts, each {attempt:.1f} s measured "
        f"+ {args.model_s:.0f} s model time (assumed), {args.slots} attempts at once per node:"
    )
    for nodes in (1, 2, 4, 8, 16, 32, 64):
        waves = math.ceil(units / (nodes * args.slots))
        wall = connect_s + waves * (unit_s + dispatch)
        print(f"  {nodes:3d} node(s): {waves:5d} waves  ~ {wall / 3600:6.2f} h")


if __name__ == "__main__":
    main()
