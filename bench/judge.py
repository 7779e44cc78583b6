"""What the judge costs per grading, beside the in-process runner it replaces, in one run.

For every shipped task with a solution, the solved end state is sealed once per sandbox and
graded alternately by ``judged_tests`` and by ``tests_pass`` with the same ``start_dir``
(interleaved, so machine noise hits both alike); the medians and their ratio are printed per
task, then the median ratio over the suite. Target (issue #12): judge <= 1.5x tests_pass.

Usage: ``python bench/judge.py [--repeat 5] [--sandbox local|docker|both]
[--image endstate-sandbox:0.1.0]``. Docker is skipped, with the reason printed, when no daemon
answers or the image is missing.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

from endstate_harness.errors import SandboxError
from endstate_harness.graders import judged_tests, tests_pass
from endstate_harness.sandbox.base import TreeSandbox
from endstate_harness.sandbox.docker.container import IMAGE_ENV, LOCAL_IMAGE, DockerSandbox, connect
from endstate_harness.sandbox.local import LocalSandbox
from endstate_harness.task import load_task

ROOT = Path(__file__).resolve().parents[1]


def _judge_args(task_dir: Path) -> dict[str, object]:
    task = load_task(task_dir)
    for spec in task.graders:
        if spec.name.endswith(":judged_tests"):
            return dict(spec.args)
    return {"start_dir": "tests"}


def measure(box: TreeSandbox, task_dir: Path, repeat: int) -> tuple[float, float]:
    args = _judge_args(task_dir)
    start = str(args.get("start_dir", "tests"))
    judge_s: list[float] = []
    inproc_s: list[float] = []
    for _ in range(repeat):
        began = time.perf_counter()
        assert judged_tests(box, **args).passed, task_dir.name  # type: ignore[arg-type]
        judge_s.append(time.perf_counter() - began)
        began = time.perf_counter()
        tests_pass(box, start_dir=start)
        inproc_s.append(time.perf_counter() - began)
    return statistics.median(judge_s), statistics.median(inproc_s)


def run(kind: str, image: str, repeat: int) -> list[float]:
    ratios = []
    print(f"\n{kind} sandbox: median seconds per grading of the solved end state")
    print(f"{'task':36s} {'judged_tests':>12s} {'tests_pass':>10s} {'ratio':>6s}")
    for task_dir in sorted(p for p in (ROOT / "tasks").iterdir() if (p / "task.json").exists()):
        if not (task_dir / "solution").is_dir():
            continue
        box: TreeSandbox = (
            LocalSandbox(task_dir / "fixture")
            if kind == "local"
            else DockerSandbox(task_dir / "fixture", image=image, pull=False)
        )
        with box:
            box.stage(task_dir / "solution")
            box.seal()
            box.stage(task_dir / "holdout")
            judge, inproc = measure(box, task_dir, repeat)
        ratios.append(judge / inproc)
        print(f"{task_dir.name:36s} {judge:12.3f} {inproc:10.3f} {judge / inproc:5.2f}x")
    print(f"median ratio judged_tests / tests_pass ({kind}): {statistics.median(ratios):.2f}x "
          "(target <= 1.5x)")
    return ratios


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--sandbox", choices=["local", "docker", "both"], default="both")
    parser.add_argument("--image", default=os.environ.get(IMAGE_ENV) or LOCAL_IMAGE)
    opts = parser.parse_args()
    kinds = ["local", "docker"] if opts.sandbox == "both" else [opts.sandbox]
    for kind in kinds:
        if kind == "docker":
            try:
                client = connect(timeout_s=5)
                client.images.get(opts.image)
                client.close()
            except (SandboxError, Exception) as exc:
                print(f"\ndocker sandbox: skipped ({exc})")
                continue
        run(kind, opts.image, opts.repeat)


if __name__ == "__main__":
    main()
