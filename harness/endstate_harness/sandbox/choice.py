"""Which sandbox a run uses, and why: one choice for prove, eval, redteam, run, the hook,
the language server and the library's ``ProveOptions`` (:func:`resolve_sandbox`).

Every one of them asks :func:`resolve_sandbox`, with :data:`DEFAULT_KIND` when nothing is
said; none guesses before it. The editors' settings (VS Code, Neovim, Helix) offer
:class:`SandboxKind` with :data:`DEFAULT_KIND` as the default, held to it by a test. prove's
early start, which begins before prove's imports, asks :func:`decide_ahead`: the same
decision, made sooner in a thread of its own and kept for the command's own
:func:`resolve_sandbox`, so that one command makes one decision.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, replace
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol

import endstate_harness.sandbox.walls as walls
from endstate_harness.errors import SandboxError
from endstate_harness.sandbox.command import hash_seed_value
from endstate_harness.sandbox.docker.address import nothing_listens
from endstate_harness.sandbox.scratch import grading_scratch_root

if TYPE_CHECKING:  # the base pulls in the task model; a command that only parses
    # --sandbox does not pay for it
    from endstate_harness.sandbox.base import TreeSandbox


class SandboxMaker(Protocol):
    """What the runner needs to make a task's sandbox: a :class:`SandboxChoice`, or a test's
    own backend."""

    @property
    def label(self) -> str:
        """What results record as the sandbox."""
        ...

    def make(self, fixture: Path) -> TreeSandbox:
        """A fresh, not yet started sandbox over ``fixture``."""
        ...


class SandboxKind(StrEnum):
    """What a command line asks for with ``--sandbox``."""

    auto = "auto"
    docker = "docker"
    local = "local"


DEFAULT_KIND = SandboxKind.auto
"""The one default of every command."""

LOCAL_WARNING = (
    "the local sandbox runs the task's code on this machine as you, with no isolation: use "
    "it for your own tasks and trusted models; every verdict it grades is marked \"no walls\""
)
WALLED_NOTE = (
    "the local sandbox walls every command in with bubblewrap (its own namespaces, the system "
    "read-only, a private /tmp and HOME, no network); Docker adds memory and process limits"
)


@dataclass(frozen=True)
class SandboxChoice:
    """Where every sandbox of a run is made: ``local``, or ``docker`` with its image.

    ``reason`` says why (printed in the run's header and kept in its JSON). ``grading``
    sandboxes (prove's checks) keep their trees in memory where the machine allows, are
    removed in the background, and take Docker containers from the pool; an agent's sandbox
    (eval, run, redteam) does neither.
    """

    kind: Literal["local", "docker"] = "local"
    image: str | None = None
    reason: str = ""
    grading: bool = False
    ready: bool = True
    """False when Docker was asked for and no daemon answers: every sandbox will fail to
    start (prove reports each check unassessed; eval and redteam refuse up front)."""
    hash_seed: int = 0
    """``PYTHONHASHSEED`` of every sandbox it makes (their commands, the judge and its
    child): the task format's 0 by default; prove grades once more under another
    (:meth:`varied`), since a real agent's run does not share the grader's."""
    test_order: str = ""
    """The order the judge runs the tests in: "" as discovered, ``reversed``, ``shuffled:N``
    (:attr:`endstate_harness.sandbox.base.Sandbox.test_order`)."""

    @property
    def label(self) -> str:
        """What results record as the sandbox (``local`` or ``docker``)."""
        return self.kind

    def walls_note(self) -> str | None:
        """Why the code under test runs without walls (the local sandbox where bubblewrap
        cannot start, :func:`endstate_harness.sandbox.walls.status`), else None."""
        if self.kind == "docker":
            return None
        found = walls.status()
        return None if found.available else found.reason

    def walls(self) -> str:
        """What walls the code under test in: ``docker``, ``bubblewrap`` or ``none``."""
        if self.kind == "docker":
            return "docker"
        return "none" if self.walls_note() is not None else "bubblewrap"

    def header(self) -> str:
        """One line for a run's header: the sandbox, its image or its walls, and why."""
        if self.kind == "docker":
            where = f"docker ({self.image})"
        else:
            note = self.walls_note()
            where = "local (walled by bubblewrap)" if note is None else f"local (no walls: {note})"
        return f"sandbox: {where}" + (f": {self.reason}" if self.reason else "")

    def describe(self) -> dict[str, str | None]:
        """The same, for JSON output."""
        out: dict[str, str | None] = {"kind": self.kind, "image": self.image,
                                      "reason": self.reason, "walls": self.walls()}
        if self.kind == "local":
            out["walls_note"] = self.walls_note()
        return out

    def for_grading(self) -> SandboxChoice:
        return replace(self, grading=True)

    def varied(self, hash_seed: int, test_order: str = "") -> SandboxChoice:
        """The same sandbox under another hash seed and test order."""
        hash_seed_value(hash_seed)  # a seed PYTHONHASHSEED refuses fails here, not in a run
        return replace(self, hash_seed=int(hash_seed), test_order=test_order)

    def variation(self) -> str:
        """``hash seed 0, tests as discovered``: what a grading under this choice varied."""
        order = {"": "tests as discovered", "reversed": "tests in reverse order"}.get(
            self.test_order, f"tests {self.test_order.replace(':', ' by seed ')}")
        return f"hash seed {self.hash_seed}, {order}"

    def make(self, fixture: Path) -> TreeSandbox:
        """A fresh, not yet started sandbox over ``fixture``, under this choice's hash seed
        and test order."""
        box = self._make(fixture)
        box.hash_seed = hash_seed_value(self.hash_seed)
        box.test_order = self.test_order
        return box

    def _make(self, fixture: Path) -> TreeSandbox:
        if self.kind == "docker":
            if self.grading:
                # deferred: the Docker client is ~75 ms to import, which a local run never needs
                from endstate_harness.sandbox.docker.pool import PooledDockerSandbox

                return PooledDockerSandbox(fixture, image=self.image, pull=False,
                                           scratch_root=grading_scratch_root())
            # deferred: as above
            from endstate_harness.sandbox.docker.container import DockerSandbox

            return DockerSandbox(fixture, image=self.image)
        # deferred: a command that never makes a sandbox does not pay for the backend
        from endstate_harness.sandbox.local import LocalSandbox

        if not self.grading:
            return LocalSandbox(fixture)
        box = LocalSandbox(fixture, scratch_root=grading_scratch_root())
        # closed by the dozen: deleting the trees is left to a background thread
        box.remove_in_background = True
        return box


def where_ran(kind: str | None, image: str | None = None, walls: str | None = None) -> str:
    """``docker (endstate-sandbox:0.2.0)``, ``local (walled by bubblewrap)``, ``local (no walls:
    why)``: what a run's reports say about where it ran. ``walls`` is what the run's header said
    (``local (walled by bubblewrap): …``), or ``bubblewrap``/``none``; a run read back from a
    JSON saved before walls were recorded reads "local (not isolated)"."""
    if kind == "docker":
        return f"docker ({image})" if image else "docker"
    if kind != "local":
        return kind or "unknown"
    if walls == "bubblewrap":
        return "local (walled by bubblewrap)"
    if walls and walls.startswith("local ("):
        depth = 0
        for at, char in enumerate(walls):
            depth += {"(": 1, ")": -1}.get(char, 0)
            if char == ")" and depth == 0:
                return walls[: at + 1]
    return "local (not isolated)"


_Key = tuple[SandboxKind, str | None, str | None]
_ahead: dict[_Key, Future[SandboxChoice]] = {}
_ahead_lock = threading.Lock()


def decide_ahead(
    kind: SandboxKind | str = DEFAULT_KIND, image: str | None = None, *, version: str | None = None
) -> SandboxChoice:
    """:func:`resolve_sandbox`'s decision, made now and kept for the command's own call with
    the same ``kind``, ``image`` and ``version`` (taken once).

    Why: prove's early start (:mod:`endstate_author.cli.prove_early`) must know whether the
    local sandbox grades before prove's imports are done, and the command then decides again
    ~0.3 s later; two decisions could differ (a daemon starting meanwhile), and guessing
    from the environment instead once disagreed with the choice. The command that asks while
    this one is still deciding waits for its answer. No image is pulled here: only ``auto``
    and ``local`` without an image are decided ahead (a ``docker`` run never grades locally).

    Raises:
        ValueError: ``kind`` is none of auto, docker, local, or asks for a pull (docker, an
            image).
    """
    kind = SandboxKind(kind)
    if kind is SandboxKind.docker or image:
        raise ValueError("only auto and local without --image are decided ahead")
    future: Future[SandboxChoice] = Future()
    with _ahead_lock:
        _ahead[(kind, image, version)] = future
    try:
        choice = _decide(kind, image, version=version, say=None, pull=False)
    except BaseException as exc:
        future.set_exception(exc)
        raise
    future.set_result(choice)
    return choice


def resolve_sandbox(
    kind: SandboxKind | str = DEFAULT_KIND,
    image: str | None = None,
    *,
    version: str | None = None,
    say: Callable[[str], None] | None = None,
    pull: bool = True,
) -> SandboxChoice:
    """The sandbox a run uses, decided once before any task starts.

    ``auto``: Docker when the daemon answers and the image is present, else local with the
    reason (no daemon is asked where none can listen: a Unix socket that is not there); an
    explicit ``image`` is a request for Docker (checked as for ``docker``) whenever a daemon
    answers. ``docker``: the image is checked here, so that a missing image is one error
    instead of one per task; with no daemon at all the choice is returned anyway (each
    sandbox then fails to start, which prove reports as unassessed and eval as an error).
    ``local``: no question asked. A decision :func:`decide_ahead` made for this command is
    the answer.

    ``pull=False`` asks without side effects (an editor looking up cached results): an absent
    image is named, not pulled, and the choice is not ``ready``.

    Raises:
        SandboxError: ``docker`` was asked for, the daemon answers, and the image is not
            there and cannot be pulled (the message says how to build it).
        ValueError: ``kind`` is none of auto, docker, local.
    """
    kind = SandboxKind(kind)
    with _ahead_lock:
        made = _ahead.pop((kind, image, version), None)
    if made is not None:
        return made.result()
    return _decide(kind, image, version=version, say=say, pull=pull)


def _decide(
    kind: SandboxKind,
    image: str | None,
    *,
    version: str | None,
    say: Callable[[str], None] | None,
    pull: bool,
) -> SandboxChoice:
    if kind is SandboxKind.local:
        return SandboxChoice("local", reason="--sandbox local")
    if kind is SandboxKind.auto and nothing_listens():
        # no socket, no daemon: the Docker client (~75 ms) is not even imported
        return SandboxChoice(
            "local", reason="no Docker daemon answers (use --sandbox docker once it runs)"
        )
    # deferred: the Docker client costs ~75 ms to import; only a run that may use it asks
    from endstate_harness.sandbox.docker.daemon import docker_available

    # deferred: as above
    from endstate_harness.sandbox.docker.image import (
        resolve_image,
        toolkit_version,
        usable_image,
    )

    version = version or toolkit_version()
    if not docker_available():
        if kind is SandboxKind.auto:
            return SandboxChoice(
                "local", reason="no Docker daemon answers (use --sandbox docker once it runs)"
            )
        resolved = resolve_image(image, version, check=False)
        return SandboxChoice("docker", resolved.image, ready=False,
                             reason="--sandbox docker, but no Docker daemon answers")
    if kind is SandboxKind.auto and not image:
        resolved = resolve_image(image, version)
        if not resolved.present:
            return SandboxChoice(
                "local",
                reason=f"the Docker image {resolved.image} is not built (sudo endstate-author "
                "sandbox build)",
            )
        return SandboxChoice("docker", resolved.image, reason=f"Docker answers; image: "
                             f"{resolved.reason}")
    asked = "--sandbox docker" if kind is SandboxKind.docker else "Docker answers"
    if not pull:
        resolved = resolve_image(image, version)
        return SandboxChoice("docker", resolved.image, ready=bool(resolved.present),
                             reason=f"{asked}; image: {resolved.reason}")
    resolved = usable_image(image, version, say=say or (lambda _line: None))
    return SandboxChoice("docker", resolved.image, reason=f"{asked}; image: {resolved.reason}")


__all__ = [
    "DEFAULT_KIND",
    "LOCAL_WARNING",
    "WALLED_NOTE",
    "SandboxChoice",
    "SandboxError",
    "SandboxKind",
    "SandboxMaker",
    "decide_ahead",
    "resolve_sandbox",
    "where_ran",
]
