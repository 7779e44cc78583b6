"""A sealed end state with some files replaced, held in memory: what the graders that read only
the sealed state see of a variant of it, without a tree to copy.

Why: prove grades every mutant of a solution (a solution with one file changed) with the
task's path guards and structure graders before its tests. Building each mutant's end state as
a tree (copy the fixture, lay the solution over it, write the mutant, seal: read it back)
costs several milliseconds of the prove process per mutant, all to change one file of a
snapshot the batch's own sandbox already holds. A :class:`SealedVariant` is that snapshot with
the file replaced; it reads exactly as a sandbox sealed on the mutant's tree would.

It runs nothing: :meth:`SealedVariant.run` and :meth:`SealedVariant.open_channel` raise, so
only graders that read the sealed state (``reads_sealed_state_only``) may be given one.
"""

from __future__ import annotations

from endstate_harness.errors import PathEscapeError, SandboxError
from endstate_harness.sandbox.base import Sandbox, TreeSandbox
from endstate_harness.sandbox.channel import Channel
from endstate_harness.sandbox.command import ExecResult
from endstate_harness.sandbox.snapshot import Entry, Snapshot
from endstate_harness.sandbox.tree import changed_between


class SealedVariant(Sandbox):
    """``base``'s sealed end state with ``files`` replaced (see :func:`variant_of`)."""

    def __init__(self, base: TreeSandbox, snapshot: Snapshot) -> None:
        self._base = base
        self._snapshot = snapshot

    def run(self, command: str, *, timeout_s: float | None = None) -> ExecResult:
        raise SandboxError("a sealed variant runs nothing (only the sealed state is read)")

    def open_channel(self, argv: list[str], *, timeout_s: float) -> Channel:
        raise SandboxError("a sealed variant runs nothing (only the sealed state is read)")

    def read_text(self, path: str) -> str:
        data = self._snapshot.read_bytes(path)
        return "" if data is None else data.decode("utf-8", errors="replace")

    def fixture_text(self, path: str) -> str:
        return self._base.fixture_text(path)

    def end_state_files(self) -> dict[str, str]:
        return self._snapshot.text_files()

    def changed_paths(self) -> list[str]:
        fixture = self._base.fixture_snapshot()
        before = fixture.digests() if fixture is not None else {}
        return changed_between(before, self._snapshot.digests())

    def tree_hash(self) -> str:
        return self._snapshot.tree_hash()

    def exists(self, path: str) -> bool:
        return self._snapshot.exists(path)

    def holdout_files(self) -> dict[str, bytes]:
        return self._base.holdout_files()

    def fixture_files(self) -> dict[str, bytes]:
        return self._base.fixture_files()

    def end_state_problem(self) -> str | None:
        return None

    def walls_note(self) -> str | None:
        return self._base.walls_note()

    def walls(self) -> str:
        return self._base.walls()

    def check_health(self) -> None:
        """Nothing to die: the state is in memory."""


def variant_of(base: TreeSandbox, files: dict[str, bytes | None]) -> SealedVariant | None:
    """``base``'s sealed end state with each path of ``files`` holding those bytes instead,
    or None when a tree would have to be built to know what sealing it gives: ``base`` is not
    sealed or has a problem, or a path is not a regular file of the sealed state reached
    without a link (a new file, a removed one, one behind a link)."""
    sealed = base.sealed_snapshot()
    if sealed is None or base.end_state_problem() is not None:
        return None
    entries = dict(sealed.entries)
    for rel, data in files.items():
        try:
            resolved = sealed.resolve(rel)
        except PathEscapeError:
            return None
        entry = entries.get(rel)
        if resolved != rel or entry is None or entry.kind != "f" or data is None:
            return None
        entries[rel] = Entry("f", data, executable=entry.executable)
    return SealedVariant(base, Snapshot(entries))
