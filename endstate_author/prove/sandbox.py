"""Which sandbox every check of a prove run uses, and how the choice is made.

Kept apart from the checks because the choice is made once, up front (by the CLI, with a
note when Docker is not there), and the Docker client is heavy to import: only a run that
uses or asks about Docker pays for it.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from endstate_author import __version__
from endstate_author.testcmd.graders import builtin_name
from endstate_harness import warm
from endstate_harness.judge.grader import _judge_env, child_command
from endstate_harness.local_sandbox import LocalSandbox, prestart_channel
from endstate_harness.sandbox import TreeSandbox
from endstate_harness.scratch import grading_scratch_root
from endstate_harness.task import Task


@dataclass(frozen=True)
class SandboxSpec:
    """Which sandbox every check uses: ``local`` or ``docker`` (with its image)."""

    kind: Literal["local", "docker"] = "local"
    image: str | None = None

    def make(self, fixture: Path) -> TreeSandbox:
        if self.kind == "docker":
            # deferred: the Docker client is ~75 ms to import, which --sandbox local never needs
            from endstate_harness.docker_pool import PooledDockerSandbox

            # every check gets a container of its own, reset and reused from the pool; its
            # trees (bind-mounted at /work) in memory too, as for the local sandbox
            return PooledDockerSandbox(fixture, image=self.image, pull=False,
                                       scratch_root=grading_scratch_root())
        # a check's trees are small and short-lived: in memory where the machine allows
        box = LocalSandbox(fixture, scratch_root=grading_scratch_root())
        # closed by the dozen: deleting the trees is left to a background thread (drained
        # before a task's proof is returned, see prove_task)
        box.remove_in_background = True
        return box

    def prestart(self, task: Task) -> list[threading.Thread]:
        """Start, in the background, the warm interpreters the task's ``judged_tests``
        gradings will fork from (the judge on the host, its child in the local sandbox), so
        their start overlaps loading, linting and planning instead of delaying the first
        checks. The same interpreters the first grading would start (same keys), only
        earlier; a check that needs one before it is up waits for it as it would have.

        Not daemon threads: an interrupted prove lets them finish before the exit handlers
        close every warm interpreter, so none outlives the run."""
        if self.kind != "local":
            return []
        pythons = sorted({
            str(spec.args.get("python", "python3"))
            for spec in task.graders
            if builtin_name(spec.name) == "judged_tests"
        })
        starts: list[Callable[[], None]] = [
            functools.partial(prestart_channel, child_command(python),
                              scratch_root=grading_scratch_root())
            for python in pythons
        ]
        if starts:
            starts.append(prestart_judge)
        threads = [threading.Thread(target=_quietly, args=(start,), name="endstate-prestart")
                   for start in starts]
        for thread in threads:
            thread.start()
        return threads


def prestart_judge() -> None:
    """Start the judge's warm interpreter now rather than at the first grading: the very key
    :func:`endstate_harness.judge.grader._start_judge` asks for (module and environment), so
    it is the same zygote, only earlier. (Here, not in ``grader.py``, whose text is vendored
    into suites where there is no warm start.)"""
    warm.zygote_for("endstate_harness.judge.main", _judge_env())


def _quietly(start: Callable[[], None]) -> None:
    try:
        start()
    except Exception:  # an early start that fails is left to the lazy start
        pass


def choose_sandbox(
    kind: str | None,
    image: str | None,
    *,
    version: str = __version__,
    say: Callable[[str], None] | None = None,
) -> tuple[SandboxSpec, str | None]:
    """The sandbox to use and a one-line note when the choice deserves one.

    ``kind`` None is automatic: Docker when a daemon answers, else local (with the note). For
    Docker the image is chosen the one way every command chooses it
    (:func:`endstate_harness.image.resolve_image`: ``image``, ``$ENDSTATE_SANDBOX_IMAGE``, the
    toolkit's own image when built, ``python:3.12-slim``) and checked once, here, so a missing
    image is one error before any task starts instead of one per check.

    Raises:
        SandboxError: the daemon answers but the image is not there and cannot be pulled (the
            message says which image and how to build it).
    """
    if kind == "local":
        return SandboxSpec("local"), None
    # deferred: the Docker client costs ~75 ms to import; only a Docker run asks it
    from endstate_harness.docker_daemon import docker_available

    # deferred: as above (it imports the Docker client too)
    from endstate_harness.image import resolve_image, usable_image

    if not docker_available():
        if kind is None:
            return (
                SandboxSpec("local"),
                "note: no Docker daemon answers, so checks run in the local sandbox, which does "
                "not isolate the task's code from this machine (use --sandbox docker once "
                "Docker runs)",
            )
        # --sandbox docker and no daemon: like any sandbox that will not start, each check
        # says so as unassessed (ES908); the image is named, not looked for
        return SandboxSpec("docker", resolve_image(image, version, check=False).image), None
    resolved = usable_image(image, version, say=say or (lambda _line: None))
    return SandboxSpec("docker", resolved.image), None
