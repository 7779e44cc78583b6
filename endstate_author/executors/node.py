"""The work one node of a cluster does for one unit: prove one task, run one attempt.

Plain functions, free of the engine, so that what runs on a node is the same code the local
executor runs (:func:`endstate_author.prove.run.prove_task`,
:func:`endstate_harness.runner.run_task`) over the task unpacked from its archive. Nothing
here writes outside its scratch folder: the prove cache stays off (the driver answers from
it and fills it) and the attempt's session store is a scratch file whose bytes go back to
the driver. On cancellation (the engine raises KeyboardInterrupt in the unit's thread)
every sandbox the unit opened is closed — containers removed — before it ends. The engine
may also kill the worker outright (it does when the driver's job ends), so a watcher process
(:mod:`endstate_harness.process.watchdog`) removes the unit's scratch folder and containers then.
"""

from __future__ import annotations

import dataclasses
import socket
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from endstate_author.executors.archive import TaskArchive, remove, unpack
from endstate_author.prove.model import ProveOptions, TaskProof
from endstate_author.prove.run import prove_task
from endstate_harness.agent.session import SessionStore
from endstate_harness.process import watchdog
from endstate_harness.process.cleanup import OPEN_SANDBOXES
from endstate_harness.runner import TaskResult, run_task
from endstate_harness.task import load_task


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


def prove_unit(archive: TaskArchive, options: ProveOptions) -> TaskProof:
    """Every check of one task, on this node; paths in the proof are the scratch copy's."""
    remote = dataclasses.replace(options, use_cache=False, on_check=None)
    scratch, root = _unpack_guarded(archive)
    pool = ThreadPoolExecutor(max_workers=remote.jobs) if remote.jobs > 1 else None
    try:
        return prove_task(root, remote, pool, root.parent)
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
