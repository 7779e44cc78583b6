"""A process in a sandbox that the harness talks to over its stdin and stdout.

Kept apart from :mod:`endstate_harness.sandbox.base` (which re-exports it) so that module stays
about trees and commands; the judge is the one user.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from typing import Self


class Channel(ABC):
    """A process in the sandbox that the harness talks to over its stdin and stdout.

    Why: the judge (:mod:`endstate_harness.graders.judge`) keeps the expected values in a process of
    its own and sends the code under test one call at a time; the process that runs that code
    lives in the sandbox, so the sandbox is what connects the two.
    """

    @abstractmethod
    def send(self, data: bytes) -> None:
        """Write to the process's stdin (raises OSError once it is gone)."""

    @abstractmethod
    def close_input(self) -> None:
        """End the process's stdin."""

    @abstractmethod
    def chunks(self) -> Iterator[bytes]:
        """The process's stdout as it comes, until it ends (or the channel closes)."""

    @abstractmethod
    def stderr_text(self) -> str:
        """What the process wrote to stderr so far (capped)."""

    @abstractmethod
    def close(self) -> None:
        """Stop the process and everything it started; idempotent."""

    def direct(self) -> tuple[int, int] | None:
        """Descriptors another local process may use instead of this channel: one to read
        the process's stdout, one to write its stdin (None: only through :meth:`send` and
        :meth:`chunks`). Once asked for, the channel itself is not read or written any more;
        :meth:`close` still stops the process.

        Why: the judge's every call to the code under test crossed this process twice, a
        thread's wake-up each way (0.3-0.5 ms a round trip, measured, against ~0.05 ms
        straight), when the process is a local one the judge can talk to itself."""
        return None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
