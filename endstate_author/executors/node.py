"""The work one node of a cluster does for one unit: prove one task, run one attempt."""

from __future__ import annotations

import dataclasses
import socket
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from endstate_author.executors.archive import TaskArchive, remove, unpack
from endstate_author.prove import cache
from endstate_author.prove.inputs import read_inputs
from endstate_author.prove.model import ProveOptions, TaskProof
from endstate_author.prove.run import prove_task
from endstate_harness.agent.session import SessionStore
from endstate_harness.process import watchdog
from endstate_harness.process.cleanup import OPEN_SANDBOXES
from endstate_harness.runner import TaskResult, run_task
from endstate_harness.task import Task, load_task


def host() -> str:
    return socket.gethostname()


def _unpack_guarded(archive: TaskArchive) -> tuple[Path, Path]:
    """Unpack the task, with a watcher that removes it (and this worker's containers) if the
    engine kills the worker before the unit ends."""
    watchdog.guard(docker=True)
    return unpack(archive, on_folder=watchdog.protect)


def _remove_guarded(scratch: Path) -> None:
    remove(scratch)
    watchdog.release(scratch)


class MissingInput(RuntimeError):
    """The unit's copy of a task lacks (or holds another version of) an input its proof reads:
    proving it would give an answer the user's machine would not."""


def check_inputs(task: Task, expected: dict[str, str]) -> None:
    """Raise :class:`MissingInput` unless the node's copy reads exactly the inputs the driver
    keyed the proof on (the task, its grader modules, the suite's probes and configuration)."""
    here = read_inputs(task)
    differ = sorted(k for k in expected.keys() | here.keys() if expected.get(k) != here.get(k))
    if differ:
        missing = [k for k in differ if k not in here]
        raise MissingInput(
            f"the copy of task {task.id!r} sent to this node does not hold what its proof "
            f"reads on the user's machine: {', '.join(differ)} "
            f"({'missing' if missing == differ else 'missing or different'}); a file changed "
            "while the unit was packed, or the unit does not carry every input (please report "
            "it); nothing was proved here"
        )


def prove_unit(
    archive: TaskArchive, options: ProveOptions, expected: dict[str, str] | None = None
) -> tuple[TaskProof, str]:
    """Every check of one task, on this node; paths in the proof are the scratch copy's.
    With ``expected`` (the driver's :func:`read_inputs`), the copy must read exactly
    those inputs, or the unit fails before any check runs. Returns the proof and the cache
    key of what it read here, which the driver stores it under only when it is its own."""
    remote = dataclasses.replace(options, use_cache=False, on_check=None)
    scratch, root = _unpack_guarded(archive)
    pool = ThreadPoolExecutor(max_workers=remote.jobs) if remote.jobs > 1 else None
    try:
        task = load_task(root)
        inputs = read_inputs(task)
        if expected is not None:
            check_inputs(task, expected)
        proof = prove_task(root, remote, pool, root.parent)
        return proof, cache.fingerprint(task, options, inputs)
    except BaseException:
        # cancelled: the checks still running hold sandboxes; close them so they end now
        OPEN_SANDBOXES.close_all()
        raise
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
        _remove_guarded(scratch)


def attempt_unit(
    archive: TaskArchive, attempt: int, run_kwargs: dict[str, Any]
) -> tuple[TaskResult, bytes]:
    """One attempt of one task, on this node: its result and its session store's bytes."""
    scratch, root = _unpack_guarded(archive)
    try:
        task = load_task(root)
        store_path = scratch / "sessions.sqlite3"
        store = SessionStore(store_path)
        try:
            result = run_task(
                task,
                session_store=store,
                attempt=attempt,
                suite_root=root.parent,
                **run_kwargs,
            )
        except BaseException:
            OPEN_SANDBOXES.close_all()
            raise
        return result, store_path.read_bytes()
    finally:
        _remove_guarded(scratch)
