"""Sandboxes: where an agent works and what a grader reads (task-format.md §4)."""

from __future__ import annotations

import os
import tempfile
import threading
from abc import ABC, abstractmethod
from pathlib import Path
from types import TracebackType
from typing import Self

import endstate_harness.fdtree as fdtree
import endstate_harness.sandbox.tree as tree
from endstate_harness.errors import EndStateError, PathEscapeError, SandboxDied, SandboxError
from endstate_harness.layout import PRUNED_NAMES
from endstate_harness.process import reaper, watchdog
from endstate_harness.process.cleanup import OPEN_SANDBOXES, defer_signals
from endstate_harness.sandbox.channel import Channel
from endstate_harness.sandbox.command import (
    COMMAND_ENV,
    DEFAULT_HASH_SEED,
    DEFAULT_TIMEOUT_S,
    OUTPUT_CAP_BYTES,
    ExecResult,
    cap_output,
)
from endstate_harness.sandbox.scratch import SCRATCH_PREFIX
from endstate_harness.sandbox.snapshot import (
    END_STATE_PRUNED,
    Snapshot,
    read_snapshot,
)

FIXTURE_PRUNED = PRUNED_NAMES | END_STATE_PRUNED
"""What a fixture snapshot leaves out: what the copy into ``live/`` prunes, and what an end
state's walk skips (compared with each other, the two must see the same names)."""

__all__ = [
    "COMMAND_ENV",
    "DEFAULT_TIMEOUT_S",
    "OPEN_SANDBOXES",
    "OUTPUT_CAP_BYTES",
    "Channel",
    "EndStateError",
    "ExecResult",
    "PathEscapeError",
    "Sandbox",
    "SandboxDied",
    "SandboxError",
    "TreeSandbox",
    "cap_output",
    "defer_signals",
]


class Sandbox(ABC):
    """The abstract sandbox. See the module docstring for the contract."""

    hash_seed: str = DEFAULT_HASH_SEED
    """``PYTHONHASHSEED`` of every command it runs, the judge's and its child's: the task
    format's 0 unless a run chose another (prove's second grading, ``--repeat``: set and
    dict-of-set orders are what a real agent's run varies). Set before ``setup()``."""
    test_order: str = ""
    """The order a runner that can reorder tests (the judge) runs them in: "" as discovered,
    ``reversed``, or ``shuffled:N`` (seeded with N, so a finding can be replayed)."""

    @abstractmethod
    def run(self, command: str, *, timeout_s: float | None = None) -> ExecResult:
        """Run a shell command with the live tree as working directory."""

    @abstractmethod
    def read_text(self, path: str) -> str:
        """The end-state text of ``path``; "" when missing."""

    @abstractmethod
    def fixture_text(self, path: str) -> str:
        """The pristine fixture's text of ``path``; "" when missing."""

    @abstractmethod
    def end_state_files(self) -> dict[str, str]:
        """Every text file of the end state, by forward-slash relative path."""

    @abstractmethod
    def changed_paths(self) -> list[str]:
        """Paths added, edited or deleted relative to the fixture, sorted."""

    @abstractmethod
    def tree_hash(self) -> str:
        """A hash of the live tree's content (paths, bytes, symlink targets)."""

    @abstractmethod
    def exists(self, path: str) -> bool:
        """Whether ``path`` exists in the end state."""

    def holdout_files(self) -> dict[str, bytes]:
        """The holdout staged after the seal, as the task shipped it (read when it was staged,
        so nothing that runs later can change it): what the judge runs. Empty by default."""
        return {}

    def fixture_files(self) -> dict[str, bytes]:
        """Every file of the pristine fixture, by relative path. Empty by default."""
        return {}

    def open_channel(self, argv: list[str], *, timeout_s: float) -> Channel:
        """Start ``argv`` on a fresh copy of the sealed end state *without* the holdout, with
        its stdin and stdout as a byte channel (the judge's child). Backends override."""
        raise SandboxError(f"{type(self).__name__} cannot open a channel to a process")

    def end_state_problem(self) -> str | None:
        """Why the sealed end state cannot be graded (a fifo in it, say), or None."""
        return None

    def walls_note(self) -> str | None:
        """Why the code under test runs here without walls (the local sandbox where
        bubblewrap cannot start), or None when it is walled in (a container, bubblewrap)."""
        return None

    def walls(self) -> str:
        """What walls the code under test in: ``docker``, ``bubblewrap``, ``none``, or ""
        (a sandbox that does not say)."""
        return ""

    def check_health(self) -> None:
        """Raise :class:`SandboxError` when the sandbox itself has failed (not the task).

        Why: a grader's command that cannot run because the environment died (a container
        killed from outside, a daemon gone) must be reported as unassessed, not as the
        agent's failure, and only the sandbox can tell the two apart. The default, for a
        sandbox with nothing that can die, is healthy.
        """
        return None


# ============================================================================ the concrete base

class TreeSandbox(Sandbox):
    """A sandbox over a scratch folder: the file-shaped half of every backend.

    Lifecycle: ``setup()`` makes the scratch folder, copies the fixture into ``live/`` for the
    agent and reads the pristine fixture into memory, ``start()`` brings up whatever runs commands
    (a subclass hook), ``close()`` tears it all down and is safe to call any number of times.
    As a context manager it does all three. The scratch folder is the only thing written:
    the task's own folders are read, never modified.

    Before :meth:`seal` the reading API answers from the live tree. ``seal()`` deletes compiled
    caches and reads the live tree into memory (:mod:`endstate_harness.sandbox.snapshot`); from
    then on
    ``read_text``, ``exists``, ``end_state_files``, ``changed_paths`` and ``tree_hash`` answer
    from that snapshot, so nothing that runs during grading can change what they see. Every
    ``run`` after the seal first rewrites the live tree from the snapshot plus the holdout
    (a throwaway copy nothing reads afterwards), so one grading command cannot leave anything
    for the next; :meth:`open_channel` does the same without the holdout.
    """

    def __init__(
        self,
        fixture: Path,
        *,
        scratch_root: Path | None = None,
        default_timeout_s: float = DEFAULT_TIMEOUT_S,
    ) -> None:
        self.fixture = Path(fixture)
        self.scratch_root = Path(scratch_root) if scratch_root is not None else None
        self.default_timeout_s = default_timeout_s
        self._scratch: Path | None = None
        self._sealed_hash: str | None = None
        self._fixture_snapshot: Snapshot | None = None
        self._sealed_snapshot: Snapshot | None = None
        self._holdouts: list[Snapshot] = []
        self._problem: str | None = None
        self._lock = threading.RLock()

    # --- lifecycle ------------------------------------------------------------------------

    def setup(self) -> None:
        """Make the scratch folder, copy the fixture into ``live/`` and read its snapshot."""
        with self._lock:
            if self._scratch is not None:
                raise SandboxError("sandbox is already set up")
            if not self.fixture.is_dir():
                raise SandboxError(f"fixture is missing or not a folder: {self.fixture}")
            if self.scratch_root is not None:
                self.scratch_root.mkdir(parents=True, exist_ok=True)
            OPEN_SANDBOXES.arm()
            try:
                # Created and recorded as one step: an interrupt cannot fall in between.
                with defer_signals():
                    scratch = self._make_scratch()
                    self._scratch = scratch
                    OPEN_SANDBOXES.add(self)
                    watchdog.protect(scratch)  # a cluster unit may be SIGKILLed
                tree.copy_tree(self.fixture, scratch / "live")
                (scratch / "home").mkdir()
                # Read once, before any agent code runs: what "unchanged" is compared with.
                # Read from the task's own fixture, pruned as the copy is: the same entries a
                # pristine copy would hold, without making one (prove opens a sandbox a check)
                self._fixture_snapshot = read_snapshot(
                    Path(os.path.realpath(self.fixture)), prune=FIXTURE_PRUNED
                )
            except BaseException:
                self.close()
                raise

    def _make_scratch(self) -> Path:
        """A new, empty scratch folder (a backend that reuses one overrides this and
        :meth:`_drop_scratch`; ``live/`` in it may exist, empty)."""
        return Path(tempfile.mkdtemp(prefix=SCRATCH_PREFIX, dir=self.scratch_root))

    remove_in_background = False
    """Set (by prove, whose sandboxes are closed by the dozen) to have :meth:`close` rename
    the scratch folder and leave its deletion to :mod:`endstate_harness.process.reaper`."""

    def _drop_scratch(self, scratch: Path) -> None:
        """Get rid of the scratch folder once the backend is closed."""
        if self.remove_in_background:
            reaper.remove_later(scratch)
        else:
            tree.remove_tree(scratch)

    def start(self) -> None:
        """Bring up what runs commands. Nothing to do here; backends override."""

    def close(self) -> None:
        """Stop what runs commands and delete the scratch folder. Idempotent.

        The folder is forgotten only once it is gone, and the whole teardown runs with
        signals deferred: an interrupt landing halfway would otherwise leave a folder nobody
        remembers (or, if removal itself fails, the exit-time sweep still knows it).
        """
        with defer_signals(), self._lock:
            try:
                self._close_backend()
            finally:  # a backend that cannot stop must not keep the folder alive too
                scratch = self._scratch
                if scratch is not None:
                    self._drop_scratch(scratch)
                    watchdog.release(scratch)
                self._scratch = None
                OPEN_SANDBOXES.discard(self)

    def _close_backend(self) -> None:
        """Stop whatever runs commands (a backend hook; called by :meth:`close` first)."""

    def check_health(self) -> None:
        """Raise :class:`SandboxError` when the sandbox can no longer run or read anything.

        Why: a grader that fails because the environment died (the scratch folder vanished,
        the container was killed) says nothing about the agent's work, so the runner asks
        this before trusting a verdict. Backends add their own checks.
        """
        scratch = self._scratch
        if scratch is None:
            raise SandboxError("sandbox is closed")
        if not (scratch / "live").is_dir() and self._sealed_snapshot is None:
            raise SandboxDied(f"the sandbox's live tree is gone: {scratch / 'live'}")

    def __enter__(self) -> Self:
        self.setup()  # cleans up after itself when it fails or is interrupted
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # --- folders --------------------------------------------------------------------------

    @property
    def scratch(self) -> Path:
        """The scratch folder (raises when the sandbox is not set up)."""
        if self._scratch is None:
            raise SandboxError("sandbox is not set up (call setup() or use it in a with block)")
        return self._scratch

    @property
    def live(self) -> Path:
        """The live tree: where the agent works and commands run."""
        return self.scratch / "live"

    @property
    def home(self) -> Path:
        """The HOME commands get: outside the live tree, so dotfiles are not part of the end
        state."""
        return self.scratch / "home"

    @property
    def sealed(self) -> bool:
        return self._sealed_hash is not None

    def path(self, rel: str) -> Path:
        """``rel`` resolved inside the live tree (raises :class:`PathEscapeError` if it leaves)."""
        return tree.confine(self.live, rel)

    # --- writing --------------------------------------------------------------------------

    def write_text(self, rel: str, text: str) -> None:
        """Write a file of the live tree (folders created as needed)."""
        target = self.path(rel)
        if target == Path(os.path.realpath(self.live)):
            raise SandboxError("cannot write to the sandbox root itself")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")

    def stage(self, source: Path) -> None:
        """Overlay a tree (holdout/, solution/, a defect) onto the live tree.

        After the seal this is the holdout: it is read into memory, as shipped, for
        :meth:`holdout_files` and for the grading copies later commands run on, and the tree
        the agent left is not written to (whatever modes it left there cannot stop it).
        """
        if self._sealed_snapshot is not None:
            self._holdouts.append(read_snapshot(Path(source), prune=PRUNED_NAMES))
            return
        tree.overlay_tree(Path(source), self.live)

    def seal(self) -> str:
        """Snapshot and hash the end state; idempotent. Returns the end-state hash.

        Compiled caches are deleted first. A tree that cannot be snapshot (a fifo in it, say)
        is recorded as :meth:`end_state_problem` and sealed as empty: grading then fails the
        attempt with that reason instead of reporting a harness error.
        """
        with self._lock:
            if self._sealed_hash is None:
                live = self.live
                if not live.is_dir():
                    self._problem = "the live tree is gone: the agent's code removed or moved it"
                    self._sealed_snapshot = Snapshot()
                else:
                    try:
                        # One walk: ownership granted, compiled caches deleted, tree read.
                        self._sealed_snapshot = read_snapshot(live, seal=True)
                    except EndStateError as exc:
                        self._problem = str(exc)
                        self._sealed_snapshot = Snapshot()
                    out = self._sealed_snapshot.links_out()
                    if out and self._problem is None:
                        self._problem = _links_out_problem(out)
                self._sealed_hash = self._sealed_snapshot.tree_hash()
            return self._sealed_hash

    def end_state_problem(self) -> str | None:
        return self._problem

    def sealed_snapshot(self) -> Snapshot | None:
        """The sealed end state (None before :meth:`seal`); still readable after :meth:`close`,
        so what the agent left can be inspected once its sandbox is gone (redteam's triage)."""
        return self._sealed_snapshot

    def fixture_snapshot(self) -> Snapshot | None:
        """The pristine fixture as read at :meth:`setup` (None before it)."""
        return self._fixture_snapshot

    def holdout_files(self) -> dict[str, bytes]:
        out: dict[str, bytes] = {}
        for snap in self._holdouts:
            for rel, entry in snap.entries.items():
                if entry.kind == "f":
                    out[rel] = entry.data
        return out

    def fixture_files(self) -> dict[str, bytes]:
        snap = self._fixture_snapshot
        if snap is None:
            return {}
        return {rel: e.data for rel, e in snap.entries.items() if e.kind == "f"}

    def _refresh_live(self, *, with_holdout: bool) -> Path:
        """After the seal: make the live tree a fresh copy of the snapshot (plus the holdout).

        The folder itself is kept (Docker bind-mounts it) and emptied; a live tree the
        agent's code moved away is simply made again.
        """
        live = self.live
        assert self._sealed_snapshot is not None
        if live.is_symlink() or (live.exists() and not live.is_dir()):
            live.unlink()
        if live.is_dir():
            # Emptied through its descriptor, never by path: no depth, path length or link the
            # last run left there can make the removal recurse, fail or leave the tree.
            fd = fdtree.open_root(live, grant=True)
            try:
                os.fchmod(fd, 0o755)  # what the last run left: the harness's folder again
                for name, _st in fdtree.list_dir(fd):
                    fdtree.remove_at(fd, name)
            finally:
                os.close(fd)
        if self._problem is not None:
            return live  # not gradable: nothing of it is written
        self._sealed_snapshot.write_to(live)
        if with_holdout:
            for snap in self._holdouts:
                snap.write_to(live, overlay=True)
        return live

    # --- reading the end state ------------------------------------------------------------

    def _read(self, root: Path, rel: str) -> str:
        target = tree.confine(root, rel)
        if not target.is_file():
            return ""
        return target.read_bytes().decode("utf-8", errors="replace")

    @staticmethod
    def _text(data: bytes | None) -> str:
        return "" if data is None else data.decode("utf-8", errors="replace")

    def read_text(self, path: str) -> str:
        if self._sealed_snapshot is not None:
            return self._text(self._sealed_snapshot.read_bytes(path))
        return self._read(self.live, path)

    def fixture_text(self, path: str) -> str:
        if self._fixture_snapshot is not None:
            return self._text(self._fixture_snapshot.read_bytes(path))
        return self._read(self.fixture, path)

    def exists(self, path: str) -> bool:
        if self._sealed_snapshot is not None:
            return self._sealed_snapshot.exists(path)
        return os.path.lexists(tree.confine(self.live, path))

    def end_state_files(self) -> dict[str, str]:
        if self._sealed_snapshot is not None:
            return self._sealed_snapshot.text_files()
        return tree.text_files(self.live, prune=END_STATE_PRUNED)

    def changed_paths(self) -> list[str]:
        before = self._fixture_snapshot.digests() if self._fixture_snapshot is not None else {}
        if self._sealed_snapshot is not None:
            after = self._sealed_snapshot.digests()
        else:
            after = tree.file_digests(self.live, prune=END_STATE_PRUNED)
        return tree.changed_between(before, after)

    def tree_hash(self) -> str:
        if self._sealed_hash is not None:
            return self._sealed_hash
        return tree.hash_tree(self.live, prune=END_STATE_PRUNED)

    # --- running --------------------------------------------------------------------------

    def _timeout(self, timeout_s: float | None) -> float:
        value = self.default_timeout_s if timeout_s is None else timeout_s
        if value <= 0:
            raise SandboxError(f"timeout must be positive, got {value}")
        return value

    def run(self, command: str, *, timeout_s: float | None = None) -> ExecResult:
        """Run ``command`` with ``/bin/sh -c`` in the live tree; after the seal, on a fresh
        copy of the end state with the holdout staged (see the class docstring)."""
        limit = self._timeout(timeout_s)
        if self._sealed_snapshot is not None:
            with self._lock:
                self._refresh_live(with_holdout=True)
        return self._run_command(command, limit)

    @abstractmethod
    def _run_command(self, command: str, limit: float) -> ExecResult:
        """Run ``command`` with ``/bin/sh -c`` in the live tree (backend-specific)."""


def _links_out_problem(links: list[tuple[str, str]]) -> str:
    shown = ", ".join(f"{rel!r} -> {target!r}" for rel, target in links[:5])
    more = f" and {len(links) - 5} more" if len(links) > 5 else ""
    return (f"the end state holds a link that leads out of the tree ({shown}{more}): the code "
            "behind it is not part of the end state, so it is not graded")
