"""The Ray executor: prove's tasks and eval's attempts as Ray tasks on a cluster."""

from __future__ import annotations

import dataclasses
import logging
import os
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, redirect_stdout
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import ray
from ray.exceptions import RayError, RayTaskError

from endstate_author.executors.archive import TaskArchive, pack
from endstate_author.executors.choice import ExecutorChoice, ExecutorError
from endstate_author.executors.node import attempt_unit, host, prove_unit
from endstate_author.lint.run import cores, resolve_targets
from endstate_author.prove import cache
from endstate_author.prove.inputs import read_inputs
from endstate_author.prove.messages import diagnostics as check_diagnostics
from endstate_author.prove.model import CheckResult, ProveOptions, TaskProof
from endstate_author.prove.run import load_for_prove, prove_task
from endstate_harness.agent.session import SessionStore
from endstate_harness.runner import SuiteResult, TaskResult, walls_header
from endstate_harness.task import Task

MAX_RETRIES = 2
"""Runs of a unit beyond the first after its node died (Ray's system-failure retries)."""
CANCEL_GRACE_S = 20.0
"""How long cancelled units get to close their sandboxes before they are killed."""
FEASIBILITY_EVERY_S = 2.0


@contextmanager
def session(choice: ExecutorChoice, *, docker: bool) -> Iterator[None]:
    """Connected to the cluster for the block, and disconnected after it (a local instance
    stopped). Ray prints the cluster's notices (a node that died, ...) on this process's
    stdout from a thread of its own; inside the block they go to stderr, so that stdout
    keeps only the command's output (prove's JSON, eval's report)."""
    if ray.is_initialized():  # a caller's own connection: used as it is, left open
        yield
        return
    with redirect_stdout(sys.stderr):
        connect(choice, docker=docker)
        try:
            yield
        finally:
            ray.shutdown()


def connect(choice: ExecutorChoice, *, docker: bool) -> None:
    """Join the cluster at ``choice.address``, or start a local instance (with a ``docker``
    resource when a Docker sandbox was chosen: the driver has already seen the daemon)."""
    quiet: dict[str, Any] = {
        "logging_level": logging.WARNING,
        "log_to_driver": False,
        "include_dashboard": False,
    }
    try:
        if choice.address is None:
            n = cores()
            ray.init(num_cpus=n, resources={"docker": float(n)} if docker else None, **quiet)
        else:
            ray.init(address=choice.address, **quiet)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        where = choice.address or "a local instance"
        raise ExecutorError(f"cannot use the Ray cluster at {where}: {exc}") from None


def _needs(docker: bool) -> dict[str, Any]:
    return {"num_cpus": 1, "resources": {"docker": 1} if docker else {}}


def _feasible(docker: bool) -> str | None:
    """None when some live node offers a unit's request, else why none does."""
    nodes = [n for n in ray.nodes() if n.get("Alive")]
    need = {"CPU": 1.0, **({"docker": 1.0} if docker else {})}
    for node in nodes:
        have = node.get("Resources", {})
        if all(have.get(k, 0.0) >= v for k, v in need.items()):
            return None
    if docker:
        return (
            f"no live node of the cluster ({len(nodes)} node(s)) offers the 'docker' resource "
            "(start nodes that have Docker and the sandbox image with "
            "`ray start ... --resources '{\"docker\": N}'`)"
        )
    return f"no live node of the cluster ({len(nodes)} node(s)) offers a CPU"


def _node_label(node_id: str) -> str:
    return f"{host()}/{node_id}"


@ray.remote(max_retries=MAX_RETRIES, retry_exceptions=False)
def _prove_remote(
    archive: TaskArchive, options: ProveOptions, expected: dict[str, str]
) -> tuple[TaskProof, str, str]:
    proof, key = prove_unit(archive, options, expected)
    return proof, _node_label(ray.get_runtime_context().get_node_id()), key


@ray.remote(max_retries=MAX_RETRIES, retry_exceptions=False)
def _attempt_remote(
    archive: TaskArchive, attempt: int, run_kwargs: dict[str, Any]
) -> tuple[TaskResult, bytes, str]:
    result, sessions = attempt_unit(archive, attempt, run_kwargs)
    return result, sessions, _node_label(ray.get_runtime_context().get_node_id())


class _Archives:
    """One object-store copy per distinct archive (content-addressed)."""

    def __init__(self) -> None:
        self._refs: dict[str, ray.ObjectRef] = {}

    def ref(self, task: Task, suite_root: Path) -> ray.ObjectRef:
        archive = pack(task, suite_root)
        if archive.digest not in self._refs:
            self._refs[archive.digest] = ray.put(archive)
        return self._refs[archive.digest]


def _collect(
    refs: dict[Any, int],
    docker: bool,
    on_value: Callable[[int, Any], None],
    on_lost: Callable[[int, str], None],
) -> None:
    """Wait for every submitted unit; each ends in ``on_value`` or ``on_lost`` exactly once.
    Ctrl-C (or any error here) cancels what is still out before it propagates."""
    pending = list(refs)
    last_check = time.monotonic()
    try:
        while pending:
            ready, pending = ray.wait(pending, num_returns=1, timeout=0.5)
            for ref in ready:
                try:
                    value = ray.get(ref)
                except RayTaskError as exc:
                    on_lost(refs[ref], f"the unit raised on its node: {_short(exc)}")
                except RayError as exc:
                    on_lost(
                        refs[ref],
                        f"could not run on the cluster ({MAX_RETRIES + 1} tries at most): "
                        f"{type(exc).__name__}: {_short(exc)}",
                    )
                else:
                    on_value(refs[ref], value)
            if pending and time.monotonic() - last_check > FEASIBILITY_EVERY_S:
                last_check = time.monotonic()
                why = _feasible(docker)
                if why is not None:
                    for ref in pending:
                        ray.cancel(ref, force=True)
                        on_lost(refs[ref], f"could not run on the cluster: {why}")
                    pending = []
    except BaseException:
        cancel(pending)
        raise


def cancel(refs: Sequence[Any]) -> None:
    """Cancel units: first as an interrupt inside each (it closes its sandboxes as it
    unwinds), then, after :data:`CANCEL_GRACE_S`, by killing what is still running."""
    if not refs:
        return
    for ref in refs:
        try:
            ray.cancel(ref, force=False)
        except Exception:  # already finished or its node is gone
            pass
    deadline = time.monotonic() + CANCEL_GRACE_S
    left = list(refs)
    while left and time.monotonic() < deadline:
        _, left = ray.wait(left, num_returns=len(left), timeout=0.5)
    for ref in left:
        try:
            ray.cancel(ref, force=True)
        except Exception:
            pass


def _short(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= 400 else text[:397] + "..."


def _localised(proof: TaskProof, root: Path, node: str) -> TaskProof:
    """The node's proof with the driver's paths (diagnostics point into the user's folder)."""
    remote_root = proof.path

    def here(path: Path) -> Path:
        try:
            return root / path.relative_to(remote_root)
        except ValueError:
            return path

    # texts that name the node's copy (a grader that could not be imported names the folders
    # searched) name the user's folder instead
    there, mine = str(remote_root.parent), str(root.parent)

    def text(value: str) -> str:
        return value.replace(there, mine) if there and value else value

    proof.path = root
    proof.checks = [dataclasses.replace(c, detail=text(c.detail)) for c in proof.checks]
    proof.diagnostics = [
        dataclasses.replace(d, file=here(d.file), message=text(d.message))
        for d in proof.diagnostics
    ]
    proof.node = node
    return proof


def prove_paths(
    paths: Sequence[Path],
    options: ProveOptions,
    choice: ExecutorChoice,
    on_task: Callable[[TaskProof], None] | None = None,
) -> list[TaskProof]:
    """:func:`endstate_author.prove.run.prove_paths` with every task proved on the cluster."""
    docker = options.sandbox.kind == "docker"
    with session(choice, docker=docker):
        return _prove_paths(paths, options, docker, on_task)


def _prove_paths(
    paths: Sequence[Path],
    options: ProveOptions,
    docker: bool,
    on_task: Callable[[TaskProof], None] | None,
) -> list[TaskProof]:
    targets = resolve_targets(paths)
    proofs: list[TaskProof | None] = [None] * len(targets)
    keys: dict[int, str] = {}
    node_keys: dict[int, str] = {}  # the key of what the node's copy read, per task
    refs: dict[Any, int] = {}
    archives = _Archives()
    why_not = _feasible(docker)

    def finished(index: int, proof: TaskProof) -> None:
        proofs[index] = proof
        # stored only under the key of what the node read, when that is the driver's key: no
        # answer enters the cache that a local proof of these files would not give
        stored = index in keys and node_keys.get(index) == keys[index]
        if options.use_cache and stored and not proof.unassessed and not proof.cached:
            cache.store(keys[index], proof)
        if options.on_check is not None and not proof.cached:
            for check in proof.checks:
                options.on_check(proof.task_id, check.check)
        if on_task is not None:
            on_task(proof)

    for index, (root, suite) in enumerate(targets):
        task, _ = load_for_prove(root)
        if task is None:  # nothing to send: the local answer is the same "does not load"
            finished(index, prove_task(root, options, None, suite))
            continue
        inputs = read_inputs(task)  # every input the proof reads, the node checks them
        keys[index] = cache.fingerprint(task, options, inputs)
        hit = cache.load(keys[index]) if options.use_cache else None
        if hit is not None:
            hit.cached = True
            if options.on_check is not None:
                options.on_check(task.id, "answered from the cache")
            finished(index, hit)
        elif why_not is not None:
            finished(index, _lost_proof(task.id, root, f"could not run on the cluster: {why_not}"))
        else:
            ref = _prove_remote.options(**_needs(docker)).remote(  # type: ignore[attr-defined]
                archives.ref(task, suite or root.parent), options_for_node(options), inputs
            )
            refs[ref] = index

    def value(index: int, got: tuple[TaskProof, str, str]) -> None:
        proof, node, node_keys[index] = got
        finished(index, _localised(proof, targets[index][0], node))

    def lost(index: int, why: str) -> None:
        root = targets[index][0]
        task, _ = load_for_prove(root)
        finished(index, _lost_proof(task.id if task else root.name, root, why))

    _collect(refs, docker, value, lost)
    return [p for p in proofs if p is not None]


def options_for_node(options: ProveOptions) -> ProveOptions:
    """What a node needs of the options: no callbacks (they belong to this process)."""
    return dataclasses.replace(options, on_check=None, on_check_done=None, use_cache=False)


def _lost_proof(task_id: str, root: Path, why: str) -> TaskProof:
    """A task no node could prove: one unassessed (ES908) check, never a pass or a fail."""
    result = CheckResult("cluster", "directions", "unassessed", detail=why, code="ES908")
    proof = TaskProof(task_id, root, [result])
    proof.diagnostics = check_diagnostics(root, [result])
    return proof


def run_suite(
    tasks: Sequence[Task],
    choice: ExecutorChoice,
    *,
    jobs: int = 1,
    repeat: int = 1,
    session_store_path: Path | None = None,
    on_result: Callable[[TaskResult], None] | None = None,
    provider_name: str = "",
    suite_root: Path | None = None,
    **run_kwargs: Any,
) -> SuiteResult:
    """:func:`endstate_harness.runner.run_suite` with every attempt run on the cluster
    (``jobs`` is ignored: the cluster's free CPUs decide how many run at once)."""
    maker = run_kwargs.get("sandbox")
    sandbox = maker.label if maker is not None else "local"
    with session(choice, docker=sandbox == "docker"):
        return _run_suite(
            tasks,
            sandbox,
            repeat,
            session_store_path,
            on_result,
            provider_name,
            suite_root,
            run_kwargs,
        )


def _run_suite(
    tasks: Sequence[Task],
    sandbox: str,
    repeat: int,
    session_store_path: Path | None,
    on_result: Callable[[TaskResult], None] | None,
    provider_name: str,
    suite_root: Path | None,
    run_kwargs: dict[str, Any],
) -> SuiteResult:
    docker = sandbox == "docker"
    started = time.monotonic()
    started_at = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    work = [(task, attempt) for task in tasks for attempt in range(repeat)]
    results: list[TaskResult | None] = [None] * len(work)
    store = SessionStore(session_store_path) if session_store_path is not None else None
    archives = _Archives()
    why_not = _feasible(docker)

    def finished(index: int, result: TaskResult) -> None:
        results[index] = result
        if on_result is not None:
            on_result(result)

    def lost(index: int, why: str) -> None:
        task, attempt = work[index]
        finished(
            index,
            TaskResult(
                task_id=task.id,
                category=task.category,
                passed=False,
                error=why,
                reason=why,
                attempt=attempt,
                sandbox=sandbox,
            ),
        )

    def value(index: int, got: tuple[TaskResult, bytes, str]) -> None:
        result, sessions, node = got
        result.node = node
        if store is not None:
            merge_sessions(store.path, sessions)
        finished(index, result)

    refs: dict[Any, int] = {}
    for index, (task, attempt) in enumerate(work):
        if why_not is not None:
            lost(index, f"could not run on the cluster: {why_not}")
            continue
        ref = _attempt_remote.options(**_needs(docker)).remote(  # type: ignore[attr-defined]
            archives.ref(task, suite_root or task.root.parent), attempt, run_kwargs
        )
        refs[ref] = index
    _collect(refs, docker, value, lost)
    done = [r for r in results if r is not None]
    return SuiteResult(
        started_at=started_at,
        duration_s=round(time.monotonic() - started, 3),
        provider=provider_name,
        model=next((r.model for r in done if r.model), ""),
        sandbox=sandbox,
        walls=walls_header(run_kwargs.get("sandbox")),
        repeat=repeat,
        results=done,
    )


def merge_sessions(path: Path, data: bytes) -> None:
    """Copy a node's session store (its bytes) into the driver's store at ``path``."""
    if not data:
        return
    fd, name = tempfile.mkstemp(prefix="endstate-sessions-", suffix=".sqlite3")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        conn = sqlite3.connect(path, timeout=30.0)
        try:
            conn.execute("ATTACH DATABASE ? AS node", (name,))
            for table in ("sessions", "messages", "events"):
                conn.execute(f"INSERT OR IGNORE INTO main.{table} SELECT * FROM node.{table}")
            conn.commit()
            conn.execute("DETACH DATABASE node")
        finally:
            conn.close()
    finally:
        os.unlink(name)
