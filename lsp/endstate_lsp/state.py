"""What the server remembers about each task folder, in one :class:`TaskState` per task root."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from endstate_author.assist import Graders
from endstate_author.engine.config import Config, discover
from endstate_author.engine.context import TreeEntry
from endstate_author.engine.diagnostics import Diagnostic

if TYPE_CHECKING:  # prove's package is imported on the first save, not at server start
    from endstate_author.prove.model import CheckResult

STALE_S = 2.0
"""Without watched-file notifications, cached listings and graders expire after this long."""

Trees = dict[str, dict[str, TreeEntry]]
"""Directory listings of a task by tree name (fixture, solution, …), as lint reads them."""


@dataclass
class ProveResult:
    """The outcome of one prove run: for the code lens, and findings merged into lint's."""

    ok: bool
    summary: str
    seconds: float
    diagnostics: list[Diagnostic] = field(default_factory=list)


@dataclass
class ProveRun:
    """A prove run in progress: its progress token, child process and watching task, and the
    check results known so far (cached at the save, then streamed as checks end)."""

    token: str
    process: asyncio.subprocess.Process | None = None
    task: asyncio.Task[None] | None = None
    cancelled: bool = False
    order: list[str] = field(default_factory=list)
    """Every planned check, in prove's order (empty until the cache was read)."""
    results: dict[str, CheckResult] = field(default_factory=dict)
    """Results known so far, by check name: cached ones read at the save, and streamed ones
    as prove printed them (read off the event loop)."""
    static: list[Diagnostic] | None = None
    """Lint findings prove repeats beside its checks (None until computed)."""
    ran: list[str] = field(default_factory=list)
    """Checks that really ran in this run (not answered from the cache), as they ended."""
    answered: int = 0
    """Checks the cache answered in this run."""
    dirty: bool = False
    """Results came in that are not shown yet."""
    shower: asyncio.Task[None] | None = None
    """The task showing results (one at a time, in order)."""

    def known(self) -> list[CheckResult]:
        """The results known so far, in prove's order (any the plan did not name last)."""
        ordered = [self.results[n] for n in self.order if n in self.results]
        planned = set(self.order)
        return ordered + [r for n, r in self.results.items() if n not in planned]


def discover_config(root: Path) -> Config:
    """The lint config for ``root``; the defaults when it cannot be read."""
    try:
        return discover(root)
    except Exception:
        return Config()


@dataclass
class TaskState:
    """Everything the server keeps for one task root."""

    root: Path
    config: Config | None = None
    graders: Graders | None = None
    graders_at: float = 0.0
    trees: Trees = field(default_factory=dict)
    trees_at: float = 0.0
    prove: ProveRun | None = None
    """The prove run going on now, if any."""
    stopping: list[asyncio.Task[None]] = field(default_factory=list)
    """Cancellations of superseded runs still waiting for their processes to end (a new
    run's process starts after them)."""
    proof: ProveResult | None = None
    """The last prove run's result (kept when files change: it is shown until the next run)."""
    published: set[str] = field(default_factory=set)
    """URIs of the task's *other* files that were last given diagnostics."""

    def lint_config(self) -> Config:
        """The config, read once until files change."""
        if self.config is None:
            self.config = discover_config(self.root)
        return self.config

    def grader_catalogue(self, watching: bool) -> Graders:
        """The task's graders, kept until files change (or for STALE_S when not watching)."""
        now = time.monotonic()
        if self.graders is not None and (watching or now - self.graders_at < STALE_S):
            return self.graders
        self.graders = Graders.for_task(self.root, self.root.parent, discover_config(self.root))
        self.graders_at = now
        return self.graders

    def listings(self, watching: bool) -> Trees:
        """The shared directory listings (filled by lint as rules ask for trees)."""
        now = time.monotonic()
        if not watching and now - self.trees_at > STALE_S:
            self.trees, self.trees_at = {}, now
        return self.trees

    def forget_files(self) -> None:
        """Files of the task changed on disk: drop the config, graders and listings."""
        self.config = None
        self.graders = None
        self.graders_at = 0.0
        self.trees = {}
        self.trees_at = 0.0


class TaskStates:
    """The :class:`TaskState` of every task the session has touched, by root."""

    def __init__(self) -> None:
        self._by_root: dict[Path, TaskState] = {}
        self.watching = False
        """The client reports file changes: caches need not expire."""

    def __getitem__(self, root: Path) -> TaskState:
        state = self._by_root.get(root)
        if state is None:
            state = self._by_root[root] = TaskState(root)
        return state

    def get(self, root: Path) -> TaskState | None:
        """The state of ``root`` if the session has one (never creates it)."""
        return self._by_root.get(root)

    def graders(self, root: Path) -> Graders:
        return self[root].grader_catalogue(self.watching)

    def forget_files(self, root: Path) -> None:
        state = self._by_root.get(root)
        if state is not None:
            state.forget_files()

    def all(self) -> list[TaskState]:
        return list(self._by_root.values())
