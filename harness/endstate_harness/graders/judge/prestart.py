"""The warm interpreters ``judged_tests`` forks from, started ahead of the first grading.

Why: a grading that finds them not yet started pays their start (the judge's interpreter on
the host; its child's inside the local sandbox's walls, through whatever ``python3`` on PATH
is: a version manager's shim alone costs about 0.1 s), about 0.2-0.4 s before its first test
runs. Started in background threads as early as the caller knows it will grade, that start
overlaps the caller's own work (loading, planning, importing). They are the very zygotes the
grading asks for (same keys: module, interpreter, flags, environment, folder), so nothing
about a run changes but when the start is paid.

Light on purpose: the standard library and the harness's process and sandbox modules only,
so that a command line can call it before importing anything heavy (``prove``'s early start).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterable

from endstate_harness.graders.judge.launch import JUDGE_MODULE, child_command, judge_env
from endstate_harness.process import zygote
from endstate_harness.sandbox.scratch import grading_scratch_root
from endstate_harness.sandbox.warm import prestart_channel


def prestart_judge(hash_seed: str = "0") -> None:
    """Start the judge's warm interpreter: the key ``judged_tests`` asks for."""
    zygote.zygote_for(JUDGE_MODULE, judge_env(hash_seed))


def prestart_child(python: str, hash_seed: str = "0") -> None:
    """Start the warm interpreter the judge's child forks from, for ``python``, as a local
    sandbox made for grading (its scratch root) would start it."""
    prestart_channel(child_command(python), scratch_root=grading_scratch_root(),
                     hash_seed=hash_seed)


def prestart(pythons: Iterable[str], hash_seeds: Iterable[str] = ("0",)
             ) -> list[threading.Thread]:
    """Start, each in a background thread, the child's warm interpreter for every python
    given and the judge's (none when none is given), once per hash seed (each seed has
    interpreters of its own). Not daemon threads: an interrupted
    command lets them finish before its exit handlers close every warm interpreter, so none
    outlives the run. A start that fails is left to the grading, which starts it itself."""
    seeds = list(dict.fromkeys(hash_seeds))
    starts: list[Callable[[], None]] = [
        functools.partial(prestart_child, python, seed)
        for seed in seeds for python in sorted(set(pythons))
    ]
    if starts:
        starts.extend(functools.partial(prestart_judge, seed) for seed in seeds)
    threads = [threading.Thread(target=_quietly, args=(start,), name="endstate-prestart")
               for start in starts]
    for thread in threads:
        thread.start()
    return threads


def _quietly(start: Callable[[], None]) -> None:
    try:
        start()
    except Exception:  # an early start that fails is left to the lazy start
        pass
