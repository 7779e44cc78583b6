"""The harness's exception types, in one module that imports nothing: :class:`SandboxError`
(the harness or its environment failed) and :class:`EndStateError` (the end state made
grading impossible: a failure of the attempt).
"""

from __future__ import annotations


class SandboxError(RuntimeError):
    """The sandbox could not be set up, started or used (an *error*, not a task failure)."""


class PathEscapeError(SandboxError, ValueError):
    """A relative path (or a symlink on the way) leaves the sandbox."""


class SandboxDied(SandboxError):
    """The sandbox stopped while it was in use, with the machinery around it still working
    (the container is gone or stopped while the daemon answers; the live tree vanished).

    Before the agent's code ran this is an error like any other; once the agent's code has
    run, the runner turns it into an :class:`EndStateError`, because nothing but that code
    could have killed it (or the code ran the sandbox out of memory)."""


class EndStateError(Exception):
    """The end state left by the agent cannot be graded: the attempt fails with this reason."""


class GraderContractError(TypeError):
    """A grader name that cannot be resolved, or whose signature breaks the contract of §3."""
