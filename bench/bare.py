"""The denominator of the prove benchmarks: one bare run of a task's own test command.

Why the interpreter is resolved first: on a machine where ``python3`` on PATH is a version
manager's shim (pyenv here), every run of ``python3`` first passes through a dozen shell
processes that pick the interpreter, about 0.1 s, which would double a 0.1 s test command and
halve every ratio measured against it. The issue's anchor (0.053 s for fix-help-text-wrap) is
the interpreter itself, so the bare runs put the folder of the interpreter the shim resolves
to first on PATH: the same interpreter, without the shim's detour. :func:`shim_cost` prints
what the detour would have added.
"""

from __future__ import annotations

import compileall
import functools
import json
import os
import shlex
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def precompile() -> None:
    """Our own modules' bytecode, as an installed package carries it (pip compiles a wheel's
    modules at install). A checkout run where ``PYTHONDONTWRITEBYTECODE`` is set (this machine's
    shells set it) would compile every module of ours at every start instead: about 0.1-0.2 s
    of each prove, which is not what a user pays."""
    for package in ("endstate_author", "harness/endstate_harness", "lsp/endstate_lsp"):
        compileall.compile_dir(ROOT / package, quiet=1)


def test_command(task: dict) -> str | None:
    """The task's test command, as its test-running grader runs it."""
    for grader in task.get("graders", []):
        name, args = grader.get("name", ""), grader.get("args", {})
        if name.endswith(("tests_pass", "judged_tests")):  # both run unittest discovery
            start = args.get("start_dir", "tests")
            top = args.get("top_level_dir", ".")
            pattern = args.get("pattern", "test*.py")
            return (f"python3 -m unittest discover -s {shlex.quote(start)} -t "
                    f"{shlex.quote(top)} -p {shlex.quote(pattern)}")
        if name.endswith("command_succeeds"):
            return args.get("command")
    return None


@functools.cache
def interpreter_dir() -> str | None:
    """The folder of the interpreter ``python3`` on PATH runs, when that is not the folder
    PATH names (a shim); None when ``python3`` is the interpreter itself."""
    found = shutil.which("python3")
    if found is None:
        return None
    proc = subprocess.run([found, "-c", "import sys; print(sys.executable)"],
                          capture_output=True, text=True)
    real = proc.stdout.strip()
    if proc.returncode != 0 or not real:
        return None
    folder = os.path.dirname(real)
    return None if folder == os.path.dirname(found) else folder


def bare_env(home: str, resolved: bool = True) -> dict[str, str]:
    path = os.environ["PATH"]
    folder = interpreter_dir()
    if resolved and folder is not None:
        path = f"{folder}{os.pathsep}{path}"
    return {"PATH": path, "HOME": home, "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONHASHSEED": "0", "LANG": "C.UTF-8"}


def solved_tree(task_root: Path, dest: Path, overlays: tuple[str, ...] = ("solution",)) -> Path:
    """The fixture with ``overlays`` and the holdout copied over it, at ``dest``."""
    shutil.copytree(task_root / "fixture", dest, symlinks=True)
    for part in (*overlays, "holdout"):
        if (task_root / part).is_dir():
            shutil.copytree(task_root / part, dest, symlinks=True, dirs_exist_ok=True)
    return dest


def run_once(command: str, tree: Path, env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run(["/bin/sh", "-c", command], cwd=tree, env=env,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started


def bare_run(task_root: Path, repeat: int = 9, resolved: bool = True) -> float:
    """The fastest of ``repeat`` runs of the test command on the solved tree, in seconds (0.0
    for a task without one). The fastest, as the benches keep the fastest prove: a shared
    machine's load only ever adds time, and a median of a few 0.07 s runs swung by a third
    from one task to the next here; the minimum is also the smallest denominator, so no
    ratio gains from the noise."""
    command = test_command(json.loads((task_root / "task.json").read_text()))
    if command is None:
        return 0.0
    with tempfile.TemporaryDirectory(prefix="endstate-bench-bare-") as tmp:
        tree = solved_tree(task_root, Path(tmp) / "live")
        env = bare_env(tmp, resolved)
        run_once(command, tree, env)  # the page cache warm, as for every later run
        return min(run_once(command, tree, env) for _ in range(repeat))


def shim_cost(task_root: Path) -> str:
    """A line saying what the shim adds to one bare run, for the benchmarks to print."""
    folder = interpreter_dir()
    if folder is None:
        return "bare runs: python3 on PATH is the interpreter itself (no shim)"
    through = bare_run(task_root, resolved=False)
    direct = bare_run(task_root)
    return (f"bare runs: python3 on PATH is a shim for {folder}/python3, which they run "
            f"directly ({task_root.name}: {direct:.3f} s; through the shim {through:.3f} s)")
