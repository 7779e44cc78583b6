"""The per-check prove cache: a check whose own inputs did not change keeps its result."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path

import endstate_author.prove.cache as cache
from endstate_author import __version__, interrupts
from endstate_author.probes.store import PROBES_DIR
from endstate_author.prove.checks import BY_NAME
from endstate_author.prove.inputs import grader_modules
from endstate_author.prove.model import (
    GRADING_INPUTS,
    CheckResult,
    Job,
    ProveContext,
    ProveOptions,
)
from endstate_author.prove.wire import decode_check, encode_check
from endstate_author.taskhash import feed_tree
from endstate_harness.task import Task


def inputs_of(group: str) -> tuple[str, ...]:
    """The parts of the task folder a check of ``group`` reads, as its module declares them
    (:attr:`CheckGroup.inputs`; "graders": the suite's grader modules the task names). An
    unknown group reads everything."""
    declared = BY_NAME.get(group)
    if declared is not None:
        return declared.inputs
    return (*GRADING_INPUTS, "defects", "prompt.md", "oracle.json", "suite-probes")


class Fingerprints:
    """Digests of a task's parts, each read once, combined into one key per check."""

    def __init__(self, task: Task, options: ProveOptions) -> None:
        self.task = task
        # --strict decides a warning's severity (ES912), --mutants which mutants run
        self.head = json.dumps(
            [__version__, options.sandbox.kind, options.sandbox.image, options.strict,
             options.mutants, options.sandbox.walls()]
        )
        self._parts: dict[str, str] = {}

    def part(self, name: str) -> str:
        if name not in self._parts:
            digest = hashlib.sha256()
            if name == "graders":
                # labelled by their place below the suite, never this machine's path: a
                # node's copy and the user's folder give one key
                for label, module in grader_modules(self.task):
                    feed_tree(digest, module, f"module:{label}")
            elif name == "suite-probes":
                # the probes redteam saved beside the task folders, replayed on every task
                feed_tree(digest, self.task.root.parent / PROBES_DIR, name)
            else:
                feed_tree(digest, self.task.root / name, name)
            self._parts[name] = digest.hexdigest()
        return self._parts[name]

    def key(self, group: str, check: str) -> str:
        parts = {name: self.part(name) for name in inputs_of(group)}
        blob = json.dumps([self.head, group, check, parts], sort_keys=True)
        return hashlib.sha256(blob.encode(errors="surrogateescape")).hexdigest()


def _path(key: str) -> Path:
    return cache.cache_dir() / "checks" / f"{key}.json"


def load(key: str) -> CheckResult | None:
    try:
        return decode_check(json.loads(_path(key).read_text(encoding="utf-8")))
    except (OSError, ValueError):
        return None


def store(key: str, result: CheckResult) -> None:
    if result.outcome == "unassessed" or result.unrun:
        return
    path = _path(key)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.tmp{os.getpid()}")
        tmp.write_text(json.dumps(encode_check(result)), encoding="utf-8")
        tmp.replace(path)
    except OSError:
        pass  # a cache that cannot be written only costs time


def cached_jobs(task: Task, options: ProveOptions, jobs: Iterable[Job]) -> Iterable[Job]:
    """``jobs`` answering from the per-check cache, storing what they find (``jobs`` as
    given when the cache is off or checks are repeated), each wrapped as it is taken. A hit
    is marked ``cached``."""
    if not options.use_cache or options.repeat > 1:
        return jobs
    prints = Fingerprints(task, options)
    return (_cached(job, prints.key(job[0], job[1]), task, options) for job in jobs)


def keys(task: Task, options: ProveOptions, jobs: list[Job]) -> list[tuple[Job, str]]:
    """Each job with its cache key, computed as :func:`cached_jobs` computes it."""
    prints = Fingerprints(task, options)
    return [(job, prints.key(job[0], job[1])) for job in jobs]


def _cached(job: Job, key: str, task: Task, options: ProveOptions) -> Job:
    group, name, fn = job

    def run(ctx: ProveContext) -> CheckResult:
        hit = load(key)
        if hit is not None:
            return replace(hit, cached=True)
        result = fn(ctx)
        # not after an interrupt (the check's sandbox was closed under it: its result is of a
        # killed command), nor when the parts read again differ (files edited meanwhile)
        if not interrupts.INTERRUPTED.is_set() and Fingerprints(task, options).key(
            group, name
        ) == key:
            store(key, result)
        return result

    return group, name, run
