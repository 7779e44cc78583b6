"""A process in a sandbox that the harness talks to over its stdin and stdout.

Kept apart from :mod:`endstate_harness.sandbox` (which re-exports it) so that module stays
about trees and commands; the judge is the one user.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from typing import Self


class Channel(ABC):
    """A process in the sandbox that the harness talks to over its stdin and stdout.

    Why: the judge (:mod:`endstate_harness.judge`) keeps the expected values in a process of
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

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
