"""Where units of work run: this machine's pool (the default) or a Ray cluster."""

from __future__ import annotations

import os
from types import ModuleType

from endstate_author.executors.choice import (
    EXECUTORS,
    LOOPBACK_ONLY,
    RAY_EXTRA,
    ExecutorChoice,
    ExecutorError,
    ExecutorKind,
    choose_executor,
)

__all__ = [
    "EXECUTORS",
    "LOOPBACK_ONLY",
    "RAY_EXTRA",
    "ExecutorChoice",
    "ExecutorError",
    "ExecutorKind",
    "choose_executor",
    "load_ray",
]


def load_ray(choice: ExecutorChoice | None = None) -> ModuleType:
    """The Ray executor module, or a clear :class:`ExecutorError` when Ray is missing."""
    if choice is not None and choice.address is None:
        os.environ.setdefault(LOOPBACK_ONLY, "0")
    try:
        # deferred: Ray is an optional extra, imported only when --executor ray asks for it
        from endstate_author.executors import ray as ray_executor
    except ImportError as exc:
        raise ExecutorError(
            f"--executor ray needs Ray, which is not installed ({exc}); install it with: "
            f"{RAY_EXTRA}"
        ) from None
    return ray_executor
