"""How the judge and its child are started: their commands and the judge's environment.

Apart from :mod:`endstate_harness.graders.judge.grader` (which imports the verdict's models)
so that a command can start the judge's warm interpreters before it has imported anything
heavy (``prove``'s early start, :mod:`endstate_harness.graders.judge.prestart`). Vendored with
the grader (``VENDORED_MODULES``): standard library and :mod:`endstate_harness.inside` only.
"""

from __future__ import annotations

import os
import random
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import endstate_harness.inside as inside

JUDGE_MODULE = "endstate_harness.graders.judge.main"
"""The judge process's module (``python -m``), and the key of its warm interpreter."""


PRIVATE_TMP = "private-tmp"
"""The child's argument saying that its ``/tmp`` and its IPC tables are the sandbox's own (the
walls', a container's), so that what a test left there is removed after it; the harness says
so, since nothing the child can see tells a private ``/tmp`` from the host's."""


def child_command(python: str, private_tmp: bool = False) -> list[str]:
    """The argv of the judge's child in the sandbox (the code under test runs in it)."""
    return [python, "-s", "-S", "-B", "-c", child_source(),
            *((PRIVATE_TMP,) if private_tmp else ())]


def judge_argv(config_json: str) -> list[str]:
    """How the judge process is started (on the host, with this interpreter)."""
    return [sys.executable, "-s", "-B", "-m", JUDGE_MODULE, config_json]


def judge_env(hash_seed: str = "0") -> dict[str, str]:
    """The judge's environment: the host's few variables it needs, and the hash seed of the
    sandbox it judges (the tests run here: a set they iterate must iterate as in the child's
    run; "0", the task format's, unless the run chose another)."""
    keep = ("PATH", "LANG", "LC_ALL", "TZ", "SYSTEMROOT", "VIRTUAL_ENV")
    env = {k: v for k, v in os.environ.items() if k in keep}
    env.update(PYTHONHASHSEED=hash_seed, PYTHONDONTWRITEBYTECODE="1", PYTHONIOENCODING="utf-8")
    return env


def hash_seed_of(sandbox: object) -> str:
    """A sandbox's hash seed, which the judge shares ("0" for a sandbox without one: endstate
    0.3.0's, a vendored copy's)."""
    seed = str(getattr(sandbox, "hash_seed", "0"))
    return seed if seed.isdigit() else "0"


def child_source() -> str:
    """What the child runs: the wire format, then the server (both shipped as source)."""
    return inside.program("judge_child")


PAIR_CPU_ENV = "ENDSTATE_PAIR_CPU"
"""``ENDSTATE_PAIR_CPU=0`` lets the scheduler place the judge and its child (the benchmarks'
comparison); by default they share one CPU (:func:`shared_cpu`)."""

_CPU_LOCK = threading.Lock()
_CPU_USE: dict[int, int] = {}


@contextmanager
def shared_cpu() -> Iterator[int | None]:
    """The one CPU a judge and its child run on while they talk, or None (one CPU allowed, or
    ``ENDSTATE_PAIR_CPU=0``): of this process's CPUs, one that fewest of its judges hold now
    (a random one among equals, so that separate processes spread too). The judge moves
    itself there (``main.run_on``) and asks its child to (a ``pin`` request).

    Why: the judge and its child take turns, never running at once: a request, its answer,
    about seventeen exchanges per mutant. On two CPUs each turn wakes the other CPU, which
    costs more than the turn itself (a round trip over a socket pair on this project's
    2-CPU VM: ~140 µs between two CPUs, ~8 µs on one) and finds each process's caches cold.
    On one CPU a turn costs only itself, and pairs on separate CPUs still run side by side.
    Measured on add-markdown-table-alignment (93 mutants, two batches, 2 CPUs): a mutant's
    judge and child processes took 19-23 ms and 18 ms of CPU apart, 10.5-11 ms and 7 ms on
    one CPU. Only speed depends on it: a process that may not move (a container's CPU set)
    stays where it is."""
    if os.environ.get(PAIR_CPU_ENV, "1") == "0" or not hasattr(os, "sched_getaffinity"):
        yield None
        return
    try:
        allowed = sorted(os.sched_getaffinity(0))
    except OSError:
        allowed = []
    if len(allowed) < 2:
        yield None
        return
    with _CPU_LOCK:
        fewest = min(_CPU_USE.get(c, 0) for c in allowed)
        cpu = random.choice([c for c in allowed if _CPU_USE.get(c, 0) == fewest])
        _CPU_USE[cpu] = _CPU_USE.get(cpu, 0) + 1
    try:
        yield cpu
    finally:
        with _CPU_LOCK:
            _CPU_USE[cpu] -= 1
            if not _CPU_USE[cpu]:
                del _CPU_USE[cpu]


def _pump_to_child(fd: int, channel: Any) -> None:  # a sandbox's Channel (vendored: no import)
    """The judge's output to the child, until the judge closes it."""
    try:
        while True:
            data = os.read(fd, 1 << 16)
            if not data:
                break
            channel.send(data)
    except OSError:
        pass
    finally:
        os.close(fd)
        channel.close_input()


def _pump_to_judge(fd: int, channel: Any) -> None:  # as above
    """The child's output to the judge, until the child ends."""
    try:
        for chunk in channel.chunks():
            view = memoryview(chunk)
            while view:
                view = view[os.write(fd, view):]
    except (OSError, ValueError):
        pass
    finally:
        os.close(fd)
