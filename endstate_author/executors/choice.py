"""Which executor a command asked for (``--executor``/``--address``), validated."""


from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Literal

ExecutorKind = Literal["local", "ray"]
EXECUTORS: tuple[ExecutorKind, ...] = ("local", "ray")
RAY_EXTRA = "pip install 'endstate-author[ray]'"


class ExecutorError(Exception):
    """The executor cannot be used as asked (no Ray installed, no cluster at the address)."""


@dataclass(frozen=True)
class ExecutorChoice:
    """``kind`` and, for Ray, the cluster's ``address`` (None: start a local instance)."""

    kind: ExecutorKind = "local"
    address: str | None = None

    @property
    def remote(self) -> bool:
        return self.kind == "ray"


def choose_executor(kind: str, address: str | None) -> ExecutorChoice:
    """Validate the command line's ``--executor``/``--address``; ``auto`` is $RAY_ADDRESS."""
    if kind not in EXECUTORS:
        raise ExecutorError(f"--executor must be one of {', '.join(EXECUTORS)}, not {kind!r}")
    if kind == "local":
        if address is not None:
            raise ExecutorError("--address names a Ray cluster; it needs --executor ray")
        return ExecutorChoice()
    if address is not None and not address.strip():
        raise ExecutorError("--address is empty; give HOST:PORT, ray://HOST:PORT or auto")
    if address == "auto":
        found = os.environ.get("RAY_ADDRESS", "").strip()
        if not found:
            raise ExecutorError(
                "--address auto reads $RAY_ADDRESS, which is not set; give the head node's "
                "HOST:PORT (printed by `ray start --head`), or leave --address out to start "
                "a local Ray instance"
            )
        address = found
    return ExecutorChoice("ray", address)


LOOPBACK_ONLY = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
"""Ray's switch (read when Ray is imported) that makes it use 127.0.0.1 as this node's
address instead of the machine's outward one: right for a local instance, which serves this
machine only."""
