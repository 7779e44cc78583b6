"""The harness's exception types, in one module that imports nothing.

Why a module of their own: the sandbox, the tree utilities, the graders and the judge all raise
and catch these, and each of those modules imports some of the others. Kept here, the types
never drag an import cycle along with them.

The split that matters is between an *error* and a *failure*:

* :class:`SandboxError` — the harness or its environment failed (the image is missing, the
  daemon is down, the sandbox could not start). Says nothing about the agent's work: eval keeps
  it out of the pass rate, prove reports it as unassessed.
* :class:`EndStateError` — the end state itself made grading impossible (a fifo in the tree, the
  tree gone, the sandbox killed by the code under test). The agent caused it, so the attempt
  *fails* with the reason; treating it as an error would let a bad attempt leave the pass rate.
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
