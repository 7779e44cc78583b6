"""``endstate-author prove``'s early start: the judge's warm interpreters begin before prove's
own imports.

Why: prove spends its first 0.3-0.4 s importing (typer, pydantic and the task model, the
checks) on one core, and its first check then waits another 0.2-0.4 s for the judge's warm
interpreter and its child's (inside the sandbox's walls, through ``python3``'s shim where
there is one) to start. Those starts are other processes: begun first, they run on the other
core while prove imports. Measured side by side (``bench/warm.py``'s floor, one check of
``fix-help-text-wrap``): 0.64 s without, 0.51 s with.

No guess: the command line is read only for ``--sandbox`` (``auto`` or ``local``, without
``--image`` or another executor: a Docker run never grades locally) and the tasks it names;
which sandbox grades is then decided in the background thread by the one sandbox choice
(:func:`~endstate_harness.sandbox.choice.decide_ahead`), which keeps that decision for the
command's own, so the two cannot differ. The zygotes started (only when the decision is the
local sandbox) are the very ones prove's own :func:`~endstate_author.prove.sandbox.prestart`
asks for later (same keys), so a start made here is found there, and one prove never uses (a
task that turns out not to need it) is closed at exit with the rest. Nothing here may import
at module level more than the standard library: whatever it imports delays the start it
exists for.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

MAX_TASKS = 64
"""Most ``task.json`` files read for the early start (a suite's first ones, sorted): enough
to see which interpreters a suite's judges use, cheap enough to read before the imports."""
_VALUED = frozenset({"--sandbox", "--image", "--jobs", "-j", "--only", "--repeat", "--mutants",
                     "--mutant-budget", "--output-format", "-o", "--executor", "--address"})
"""Options of ``prove`` that take a value (so the value is not taken for a task path)."""


def start(args: list[str]) -> threading.Thread | None:
    """Begin the early start for ``prove``'s arguments ``args`` (after the word ``prove``),
    in a background thread that decides the sandbox and, when it is the local one, starts
    the warm interpreters; None when the command line asks for Docker or another executor,
    names no task, or the warm start is off (``ENDSTATE_WARM=0``)."""
    if os.environ.get("ENDSTATE_WARM", "1").strip() == "0":
        return None
    kind = sandbox_asked(args)
    if kind is None:
        return None
    paths = list(_task_files(args))
    if not paths:
        return None
    thread = threading.Thread(
        target=_begin, args=(kind, paths, second_grading(args)), name="endstate-early-start"
    )
    thread.start()
    return thread


def second_grading(args: list[str]) -> bool:
    """Whether the solution's second grading (another hash seed and test order, in the
    ``directions`` group) will run: unless ``--only`` leaves the group out. Its warm
    interpreters serve its own seed, so they are started too."""
    only = [
        (arg.partition("=")[2] if "=" in arg else (args[i + 1] if i + 1 < len(args) else ""))
        for i, arg in enumerate(args)
        if arg.partition("=")[0] == "--only"
    ]
    return not only or "directions" in only


def sandbox_asked(args: list[str]) -> str | None:
    """The ``--sandbox`` the command line gives when the local sandbox may grade ("" when it
    gives none: the default is the choice module's, read in the background thread); None for
    a request for Docker (``--sandbox docker``, ``--image``) or for other machines
    (``--executor``)."""
    given: dict[str, str] = {}
    for i, arg in enumerate(args):
        name, eq, value = arg.partition("=")
        if name in ("--sandbox", "--image", "--executor"):
            given[name] = value if eq else (args[i + 1] if i + 1 < len(args) else "")
    if "--image" in given or given.get("--executor", "local") != "local":
        return None
    kind = given.get("--sandbox", "")
    return kind if kind != "docker" else None


def _task_files(args: list[str]) -> Iterator[Path]:
    """The ``task.json`` files of the task folders, suites and files named, at most
    :data:`MAX_TASKS`."""
    found = 0
    skip = False
    for arg in args:
        if skip or arg.startswith("-"):
            skip = arg in _VALUED
            continue
        path = Path(arg)
        try:
            if path.name == "task.json" and path.is_file():
                candidates = [path]
            elif (path / "task.json").is_file():
                candidates = [path / "task.json"]
            elif path.is_dir():
                candidates = sorted(path.glob("*/task.json"))
            else:
                continue
        except OSError:
            continue
        for candidate in candidates:
            if found >= MAX_TASKS:
                return
            found += 1
            yield candidate


def _graders(paths: list[Path]) -> Iterator[tuple[str, dict[str, Any]]]:
    """``(name, args)`` of every grader entry the files hold (whatever cannot be read is
    prove's to report, later; here it is only passed over)."""
    for path in paths:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        graders = data.get("graders") if isinstance(data, dict) else None
        for grader in graders if isinstance(graders, list) else []:
            if isinstance(grader, dict) and isinstance(grader.get("name"), str):
                args = grader.get("args")
                yield grader["name"], args if isinstance(args, dict) else {}


def _begin(kind: str, paths: list[Path], second: bool = True) -> None:
    try:
        # deferred: imported in this thread, so that prove's own imports start at once
        from endstate_author import __version__
        from endstate_harness.sandbox.choice import DEFAULT_KIND, decide_ahead  # deferred: as above

        if decide_ahead(kind or DEFAULT_KIND, version=__version__).kind != "local":
            return
        # deferred: as above, and only when the local sandbox grades
        from endstate_author.engine.discovery.grader_names import judged_pythons
        from endstate_author.prove.variation import seed_of  # deferred: as above
        from endstate_harness.graders.judge import prestart  # deferred: as above
        from endstate_harness.sandbox import walls  # deferred: as above

        # whether bubblewrap can wall a command in (two short processes, once per process):
        # asked here, its answer is ready when prove's sandbox choice asks (its header)
        walls.status()
        seeds = [str(seed_of(0))] + ([str(seed_of(1))] if second else [])
        for thread in prestart.prestart(judged_pythons(_graders(paths)), seeds):
            thread.join()
    except Exception:  # the early start is an optimisation: prove starts them itself
        pass
