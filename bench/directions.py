"""Benchmark: prove's directions against a plain pytest file doing the same gradings.

endstate's own repository checks its suite with a ``tests/test_suite.py``: for every task, grade
the untouched fixture (it must fail) and the fixture with solution/ laid over it (it must
pass), in one pytest process. That repository is not at hand here, so this script writes a
pytest file of the same shape for the suite (the shipped tasks/ by default): one test per task
and direction, each making a fresh local sandbox from the fixture, laying the solution over it
for the pass direction, sealing, staging the holdout and running the task's graders through
the harness, one after another in one interpreter, as such a file does (with
``ENDSTATE_WARM=0``: endstate's harness starts every test command fresh). In one run, each as a
fresh process, alternately, ``--rounds`` times:

* **pytest** — ``python -m pytest -q THAT_FILE``;
* **prove** — ``endstate-author prove SUITE --only directions --sandbox local --no-cache``
  with the default jobs (what an author runs);

and prints the medians, their ratio and whether both found every direction as expected (both
exit 0 on a sound suite). Target (issue "Speed"): prove ≤ 0.5× the pytest file.

    .venv/bin/python bench/directions.py [SUITE] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent

PYTEST_FILE = '''\
"""Every task's graders fail on its fixture and pass with its solution (generated)."""
from pathlib import Path

import pytest

from endstate_harness.graders import grade, grader_search_paths
from endstate_harness.sandbox.local import LocalSandbox
from endstate_harness.task import load_task

TASKS = {tasks!r}


def _grade(root, with_solution):
    task = load_task(root)
    box = LocalSandbox(task.fixture)
    try:
        box.setup()
        box.start()
        if with_solution:
            box.stage(task.solution)
        box.seal()
        if task.holdout is not None:
            box.stage(task.holdout)
        return grade(task.graders, box, search_paths=grader_search_paths(Path(root)))
    finally:
        box.close()


@pytest.mark.parametrize("root", TASKS)
def test_fixture_fails(root):
    assert not _grade(root, False).passed


@pytest.mark.parametrize("root", TASKS)
def test_solution_passes(root):
    assert _grade(root, True).passed
'''


def tasks_of(suite: Path) -> list[str]:
    found = []
    for manifest in sorted(suite.rglob("task.json")):
        root = manifest.parent
        if (root / "solution").is_dir() and (root / "fixture").is_dir():
            found.append(str(root))
    return found


def timed(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, int, str]:
    started = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=cwd)
    return time.perf_counter() - started, proc.returncode, proc.stdout[-400:] + proc.stderr[-400:]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("suite", nargs="?", default=str(ROOT / "tasks"))
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    suite = Path(args.suite).resolve()
    tasks = tasks_of(suite)
    if not tasks:
        sys.exit(f"bench/directions.py: no task with a fixture and a solution under {suite}")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        test_file = folder / "test_suite.py"
        test_file.write_text(PYTEST_FILE.format(tasks=tasks), encoding="utf-8")
        env = {**os.environ, "ENDSTATE_AUTHOR_CACHE": str(folder / "cache")}
        pytest_argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                       str(test_file)]
        prove_argv = [str(BIN / "endstate-author"), "prove", str(suite), "--only", "directions",
                      "--sandbox", "local", "--no-cache", "--quiet"]
        times: dict[str, list[float]] = {"pytest": [], "prove": []}
        codes: dict[str, set[int]] = {"pytest": set(), "prove": set()}
        for _ in range(args.rounds):
            for name, argv in (("pytest", pytest_argv), ("prove", prove_argv)):
                run_env = {**env, "ENDSTATE_WARM": "0"} if name == "pytest" else env
                seconds, code, tail = timed(argv, run_env, folder)
                times[name].append(seconds)
                codes[name].add(code)
                if code != 0:
                    print(f"{name} exited {code}:\n{tail}", file=sys.stderr)
    p, q = statistics.median(times["pytest"]), statistics.median(times["prove"])
    print(f"suite: {suite}, {len(tasks)} tasks, {2 * len(tasks)} gradings, "
          f"{args.rounds} rounds (medians)")
    print(f"pytest file of test_suite.py's shape   {p:7.2f} s  (exit {sorted(codes['pytest'])})")
    print(f"prove --only directions                {q:7.2f} s  (exit {sorted(codes['prove'])})"
          f"   {q / p:.2f}x pytest  (target <= 0.5x)")
    same = codes["pytest"] == {0} and codes["prove"] == {0}
    print(f"both found every direction as expected: {'yes' if same else 'NO'}")


if __name__ == "__main__":
    main()
