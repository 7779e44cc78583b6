"""Sandboxes: where an agent works and what a grader reads (task-format.md §4).

A sandbox owns a scratch folder with two trees side by side::

    <scratch>/live      the tree the agent edits and commands run in
    <scratch>/fixture   the pristine fixture, kept for ``fixture_text`` and ``changed_paths``

The grader-facing API (``run``, ``read_text``, ``fixture_text``, ``end_state_files``,
``changed_paths``, ``tree_hash``, ``exists``) reads the *sealed* end state: ``seal()`` snapshots
the live tree when the agent stops, before holdout/ is overlaid, so a grader cannot assert
on the holdout's own files or on its own side effects.

Every path is relative and confined: a path, or a symlink on the way to it, that leaves the
live tree raises :class:`PathEscapeError` and is never followed.

The abstract :class:`Sandbox` is the interface graders see. :class:`TreeSandbox` below it holds
everything file-shaped (the scratch folder, staging, sealing, the reading API), so the two
backends cannot drift on what a grader observes; ``LocalSandbox`` (``local_sandbox.py``) and
``DockerSandbox`` (``docker_sandbox.py``) add only how a command runs.
"""

from __future__ import annotations

import atexit
import os
import signal
import tempfile
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import FrameType, TracebackType
from typing import Self


class SandboxError(RuntimeError):
    """The sandbox could not be set up, started or used (an *error*, not a task failure)."""


class PathEscapeError(SandboxError, ValueError):
    """A relative path (or a symlink on the way) leaves the sandbox."""


@dataclass(frozen=True)
class ExecResult:
    """What a command run in the sandbox did."""

    exit_code: int
    stdout: str = ""
    stderr: str = ""
    timed_out: bool = False

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out

    @property
    def output(self) -> str:
        return "\n".join(part for part in (self.stdout, self.stderr) if part)


class Sandbox(ABC):
    """The abstract sandbox. See the module docstring for the contract."""

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

    def check_health(self) -> None:
        """Raise :class:`SandboxError` when the sandbox itself has failed (not the task).

        Why: a grader's command that cannot run because the environment died (a container
        killed from outside, a daemon gone) must be reported as unassessed, not as the
        agent's failure, and only the sandbox can tell the two apart. The default, for a
        sandbox with nothing that can die, is healthy.
        """
        return None


# ============================================================================ the concrete base

# Imported here, below the exceptions, because tree.py raises them: whichever of the two
# modules is imported first, the other finds what it needs already defined.
from endstate_harness import tree  # noqa: E402

DEFAULT_TIMEOUT_S = 120.0
"""How long a command may run when the caller gives no timeout (the reference's default)."""

SCRATCH_PREFIX = "endstate-sandbox-"
"""How every scratch folder's name starts (so a stray one can be recognised)."""

OUTPUT_CAP_BYTES = 1 << 20
"""Per stream: a chatty command cannot eat the harness's memory; the rest is counted, dropped."""

COMMAND_ENV: dict[str, str] = {
    # Byte-compilation writes __pycache__ into the tree being graded; hash randomisation makes
    # anything that iterates a set differ between two runs of the same end state.
    "PYTHONDONTWRITEBYTECODE": "1",
    "PYTHONHASHSEED": "0",
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
}
"""The variables every sandbox command gets besides PATH and HOME; nothing else is inherited,
so a grade cannot depend on the host's environment (or leak its secrets to the agent)."""


def cap_output(data: bytes, dropped: int) -> str:
    """Decode captured output, noting how much was dropped past the cap."""
    text = data.decode("utf-8", errors="replace")
    if dropped:
        text += f"\n[endstate: output truncated, {dropped} more bytes dropped]"
    return text


class _Cleanup:
    """Every sandbox still open in this process, closed at exit and on SIGTERM/SIGHUP.

    Ctrl-C already unwinds through ``with``/``finally`` as KeyboardInterrupt. SIGTERM and
    SIGHUP would kill the process without unwinding, leaving scratch folders and containers
    behind, so while a sandbox is open they are turned into ``SystemExit`` (which unwinds the
    same way) when the program has not installed handlers of its own. ``atexit`` closes
    whatever is still open after that.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open: dict[int, TreeSandbox] = {}
        self._atexit_done = False
        self._signals_done = False

    def arm(self) -> None:
        """Register the exit-time sweep and the SIGTERM/SIGHUP handlers (once).

        Called before a sandbox makes anything, outside any :func:`defer_signals` section:
        inside one the current handler is the deferring one, which would hide SIG_DFL.
        """
        with self._lock:
            if not self._atexit_done:
                atexit.register(self.close_all)
                self._atexit_done = True
        self._install_signal_handlers()

    def add(self, box: TreeSandbox) -> None:
        self.arm()
        with self._lock:
            self._open[id(box)] = box

    def discard(self, box: TreeSandbox) -> None:
        with self._lock:
            self._open.pop(id(box), None)

    def close_all(self) -> None:
        with self._lock:
            boxes = list(self._open.values())
        for box in boxes:
            try:
                box.close()
            except Exception:  # at exit, one bad sandbox must not keep the others alive
                pass

    def _install_signal_handlers(self) -> None:
        if self._signals_done or threading.current_thread() is not threading.main_thread():
            return
        self._signals_done = True
        for signum in (signal.SIGTERM, signal.SIGHUP):
            try:
                if signal.getsignal(signum) is signal.SIG_DFL:
                    signal.signal(signum, _exit_on_signal)
            except (ValueError, OSError):  # not settable here (e.g. embedded interpreter)
                pass


def _exit_on_signal(signum: int, _frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)


OPEN_SANDBOXES = _Cleanup()

DEFERRED_SIGNALS: tuple[signal.Signals, ...] = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
"""The signals :func:`defer_signals` holds back: the ones a user or a CI runner sends to stop
a run, whose Python handlers raise an exception wherever the main thread happens to be."""

_SignalHandler = Callable[[int, FrameType | None], object] | int | signal.Handlers | None


@contextmanager
def defer_signals() -> Iterator[None]:
    """Hold SIGINT/SIGTERM/SIGHUP back for the duration of a short critical section.

    Why: Python runs a signal handler between two bytecodes of the main thread, so Ctrl-C's
    KeyboardInterrupt (or the SystemExit a SIGTERM handler raises) can land between creating
    a resource and recording it for cleanup: after ``mkdtemp`` but before the sandbox knows its
    folder, while the Docker API creates a container whose id is not yet stored, or halfway
    through ``close()``. Whatever exists at that instant is then leaked. Inside this block the
    handlers are swapped for one that only records the signal; on the way out the original
    handlers are put back and the first recorded signal is delivered to its handler, so the
    exception is raised at a point where every resource is either recorded or gone.

    Only the main thread can change handlers (and only there do they run), so on any other
    thread this does nothing. Sections must stay short: a signal waits for them to end.
    A handler installed from C (``signal.getsignal`` is None) cannot be restored, so that
    signal is left alone.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pending: list[int] = []

    def record(signum: int, _frame: FrameType | None) -> None:
        pending.append(signum)

    previous: dict[int, _SignalHandler] = {}
    try:
        for signum in DEFERRED_SIGNALS:
            try:
                if signal.getsignal(signum) is None:
                    continue
                previous[signum] = signal.signal(signum, record)
            except (ValueError, OSError):  # not settable here (an embedded interpreter)
                continue
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)  # type: ignore[arg-type]
        if pending:
            _deliver(pending[0], previous.get(pending[0]))


def _deliver(signum: int, handler: _SignalHandler) -> None:
    """Act on a signal that arrived during a deferred section, as its handler would have."""
    if callable(handler):
        handler(signum, None)  # raises KeyboardInterrupt / SystemExit, as it would have
    elif handler == signal.SIG_DFL:
        signal.raise_signal(signum)  # the default action (terminate) was wanted
    # SIG_IGN: the signal was being ignored, so nothing happens


class TreeSandbox(Sandbox):
    """A sandbox over a scratch folder: the file-shaped half of every backend.

    Lifecycle: ``setup()`` makes the scratch folder and copies the fixture twice (``live/``
    for the agent, ``fixture/`` kept pristine), ``start()`` brings up whatever runs commands
    (a subclass hook), ``close()`` tears it all down and is safe to call any number of times.
    As a context manager it does all three. The scratch folder is the only thing written:
    the task's own folders are read, never modified.

    Before :meth:`seal` the reading API answers from the live tree. ``seal()`` copies the live
    tree to ``sealed/`` and hashes it; from then on ``read_text``, ``exists``,
    ``end_state_files``, ``changed_paths`` and ``tree_hash`` answer from that snapshot, so
    what the holdout overlay adds later, and what grading commands write, is invisible to
    them. ``run`` keeps running in the live tree, where the holdout is.
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
        self._fixture_digests: dict[str, bytes] | None = None
        self._lock = threading.RLock()

    # --- lifecycle ------------------------------------------------------------------------

    def setup(self) -> None:
        """Make the scratch folder and copy the fixture into ``live/`` and ``fixture/``."""
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
                    scratch = Path(tempfile.mkdtemp(prefix=SCRATCH_PREFIX, dir=self.scratch_root))
                    self._scratch = scratch
                    OPEN_SANDBOXES.add(self)
                tree.copy_tree(self.fixture, scratch / "fixture")
                tree.copy_tree(self.fixture, scratch / "live")
                (scratch / "home").mkdir()
            except BaseException:
                self.close()
                raise

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
                    tree.remove_tree(scratch)
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
        if not (scratch / "live").is_dir():
            raise SandboxError(f"the sandbox's live tree is gone: {scratch / 'live'}")

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

    def _end_root(self) -> Path:
        return self.scratch / ("sealed" if self._sealed_hash is not None else "live")

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
        """Overlay a tree (holdout/, solution/, a defect) onto the live tree."""
        tree.overlay_tree(Path(source), self.live)

    def seal(self) -> str:
        """Snapshot and hash the end state; idempotent. Returns the end-state hash."""
        with self._lock:
            if self._sealed_hash is None:
                snap = self.scratch / "sealed"
                if snap.exists():
                    tree.remove_tree(snap)
                tree.snapshot_tree(self.live, snap)
                self._sealed_hash = tree.hash_tree(snap)
            return self._sealed_hash

    # --- reading the end state ------------------------------------------------------------

    def _read(self, root: Path, rel: str) -> str:
        target = tree.confine(root, rel)
        if not target.is_file():
            return ""
        return target.read_bytes().decode("utf-8", errors="replace")

    def read_text(self, path: str) -> str:
        return self._read(self._end_root(), path)

    def fixture_text(self, path: str) -> str:
        return self._read(self.scratch / "fixture", path)

    def exists(self, path: str) -> bool:
        target = tree.confine(self._end_root(), path)
        return os.path.lexists(target)

    def end_state_files(self) -> dict[str, str]:
        return tree.text_files(self._end_root())

    def changed_paths(self) -> list[str]:
        if self._fixture_digests is None:
            self._fixture_digests = tree.file_digests(self.scratch / "fixture")
        return tree.changed_between(self._fixture_digests, tree.file_digests(self._end_root()))

    def tree_hash(self) -> str:
        if self._sealed_hash is not None:
            return self._sealed_hash
        return tree.hash_tree(self.live)

    # --- running --------------------------------------------------------------------------

    def _timeout(self, timeout_s: float | None) -> float:
        value = self.default_timeout_s if timeout_s is None else timeout_s
        if value <= 0:
            raise SandboxError(f"timeout must be positive, got {value}")
        return value

    @abstractmethod
    def run(self, command: str, *, timeout_s: float | None = None) -> ExecResult:
        """Run ``command`` with ``/bin/sh -c`` in the live tree (backend-specific)."""
