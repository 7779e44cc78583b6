"""Cleaning up on every path out: signals deferred in critical sections, open sandboxes closed."""

from __future__ import annotations

import atexit
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import TYPE_CHECKING, Protocol

from endstate_harness.process.groups import await_gone, kill_tree

if TYPE_CHECKING:
    import subprocess


class _Closable(Protocol):
    def close(self) -> None: ...


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
        self._open: dict[int, _Closable] = {}
        self._atexit_done = False
        self._signals_done = False

    def arm(self) -> None:
        """Register the exit-time sweep and the SIGTERM/SIGHUP handlers (once).

        Called before a sandbox makes anything, outside any :func:`defer_signals` section:
        inside one the current handler is the deferring one, which would hide SIG_DFL.
        """
        with self._lock:
            if not self._atexit_done:
                atexit.register(self._at_exit)
                self._atexit_done = True
        self._install_signal_handlers()

    def add(self, box: _Closable) -> None:
        self.arm()
        with self._lock:
            self._open[id(box)] = box

    def discard(self, box: _Closable) -> None:
        with self._lock:
            self._open.pop(id(box), None)

    def close_all(self) -> None:
        """Close every open sandbox; a signal meanwhile is acted on once all are closed."""
        with defer_signals():
            with self._lock:
                boxes = list(self._open.values())
            for box in boxes:
                try:
                    box.close()
                except Exception:  # one bad sandbox must not keep the others alive
                    pass

    def _at_exit(self) -> None:
        # At exit a signal must not cut the sweep short: CPython reports an exception from an
        # atexit callback and goes on exiting, so whatever was not closed yet would be leaked.
        with at_exit_section():
            self.close_all()

    def _install_signal_handlers(self) -> None:
        if self._signals_done or threading.current_thread() is not threading.main_thread():
            return
        self._signals_done = True
        for signum in (signal.SIGTERM, signal.SIGHUP):
            try:
                if signal.getsignal(signum) is signal.SIG_DFL:
                    signal.signal(signum, exit_on_signal)
            except (ValueError, OSError):  # not settable here (e.g. embedded interpreter)
                pass


def exit_on_signal(signum: int, frame: FrameType | None) -> None:
    """SIGTERM's and SIGHUP's handler: ``SystemExit(128 + signum)``, which unwinds as Ctrl-C
    does (never raised inside the import machinery: :func:`later_if_importing`)."""
    if not later_if_importing(signum, frame):
        raise SystemExit(128 + signum)


_IMPORT_MACHINERY = ("<frozen importlib._bootstrap>", "<frozen importlib._bootstrap_external>")
RESEND_AFTER_S = 0.005
"""How soon a signal that came inside the import machinery is sent again."""


def later_if_importing(signum: int, frame: FrameType | None) -> bool:
    """Whether the signal came while the main thread ran the import machinery's own code;
    then it is sent to this process again in a moment, to be acted on outside it, and the
    handler must not raise now.

    Why: an exception raised there can leave the interpreter's import lock held (the weakref
    callback that drops a module's lock takes the global lock first, and an exception between
    that and its ``try`` skips the release; CPython then reports it as "Exception ignored" and
    the signal is lost). Every later import, in any thread, then waits for ever: an interrupt
    stress run of ``prove`` in Docker hung once in 200 runs with a grading thread stuck in an
    import and the main thread waiting for it. Raised from the module's own code instead, the
    exception unwinds through the machinery's ``with`` blocks, which release every lock."""
    if frame is None or frame.f_code.co_filename not in _IMPORT_MACHINERY:
        return False
    timer = threading.Timer(RESEND_AFTER_S, os.kill, (os.getpid(), signum))
    timer.daemon = True
    timer.start()
    return True


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
    pending: list[int] = []
    previous: dict[int, _SignalHandler] = {}
    try:
        with _recording_signals() as (pending, previous):
            yield
    finally:  # delivered even when the block raised, as the handler would have been
        if pending:
            _deliver(pending[0], previous.get(pending[0]))


@contextmanager
def at_exit_section() -> Iterator[None]:
    """Run an interpreter-exit sweep with SIGINT/SIGTERM/SIGHUP recorded and dropped.

    Why not :func:`defer_signals`: at exit there is nothing left to stop. The program's work is
    done and the sweep is the cleanup a signal would ask for; an exception raised from an
    atexit callback is only printed ("Exception ignored in atexit callback") and skips the rest
    of that callback, which is exactly the leak the sweep exists to prevent (a zygote's scratch
    folder was once left this way by a SIGTERM during its ``wait``). The process exits with
    the status it already had; SIGKILL still stops a sweep that hangs.
    """
    with _recording_signals():
        yield


@contextmanager
def _recording_signals() -> Iterator[tuple[list[int], dict[int, _SignalHandler]]]:
    """Swap the deferred signals' handlers for one that records them, and put them back.

    Yields the record and the handlers it replaced. Only the main thread can change handlers
    (and only there do they run), so on any other thread nothing is swapped.
    """
    pending: list[int] = []
    previous: dict[int, _SignalHandler] = {}
    if threading.current_thread() is not threading.main_thread():
        yield pending, previous
        return

    def record(signum: int, _frame: FrameType | None) -> None:
        pending.append(signum)

    try:
        for signum in DEFERRED_SIGNALS:
            try:
                if signal.getsignal(signum) is None:
                    continue
                previous[signum] = signal.signal(signum, record)
            except (ValueError, OSError):  # not settable here (an embedded interpreter)
                continue
        yield pending, previous
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)  # type: ignore[arg-type]


def _deliver(signum: int, handler: _SignalHandler) -> None:
    """Act on a signal that arrived during a deferred section, as its handler would have."""
    if callable(handler):
        handler(signum, None)  # raises KeyboardInterrupt / SystemExit, as it would have
    elif handler == signal.SIG_DFL:
        signal.raise_signal(signum)  # the default action (terminate) was wanted
    # SIG_IGN: the signal was being ignored, so nothing happens


_ENDS_BY_ITSELF_S = 2.0
"""How long an interrupted :func:`run_to_end` waits for its command to end by itself before it
is killed (a kill while bubblewrap builds its sandbox could orphan the sandbox's first process,
had it not yet asked to die with bubblewrap; the walls probe ends in milliseconds)."""


def run_to_end(
    argv: list[str], *, timeout: float, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    """:func:`subprocess.run` of a short helper command (a probe), with its output captured
    and no moment at which an interrupt leaves the command, or what it started, running.

    Why not ``subprocess.run``: it kills its child when an exception comes while it waits, but
    not when one comes inside ``Popen`` itself, after the fork, while it waits for the exec.
    And a terminal's Ctrl-C reaches every process of the harness's group: a bubblewrap killed
    by it while it builds its sandbox can leave that sandbox's first process running, its
    parent gone (an interrupt stress run of ``prove`` found the walls probe's bubblewrap
    alive after the command had exited, both ways). Here the command has a session of its
    own, so only the harness ends it; it is started in a deferred section. When a signal's
    exception comes while it runs, it is given :data:`_ENDS_BY_ITSELF_S` to end by itself;
    then (or at once, on its timeout) it is killed with every process it started
    (:func:`~endstate_harness.process.groups.kill_tree`), and waited for.
    """
    import subprocess  # deferred: lint's fast path imports this module and never spawns

    proc: subprocess.Popen[bytes] | None = None
    try:
        with defer_signals():  # a signal meanwhile is raised as it ends: inside this try
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, env=env, start_new_session=True)
        out, err = proc.communicate(timeout=timeout)
    except BaseException as exc:
        if proc is not None:
            with defer_signals():  # nothing may cut the ending short
                # a short command that ends by itself leaves nothing half-built
                timed_out = isinstance(exc, subprocess.TimeoutExpired)
                if timed_out or not _reaped(proc, _ENDS_BY_ITSELF_S):
                    inner = kill_tree(proc.pid)
                    _reaped(proc, None)
                    await_gone(inner)
                for pipe in (proc.stdout, proc.stderr):
                    if pipe is not None:
                        pipe.close()
        raise
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


def _reaped(proc: subprocess.Popen[bytes], limit_s: float | None) -> bool:
    """Whether ``proc`` ended (reaped here) within ``limit_s`` (None: wait until it does).

    Why not ``proc.wait()``: a KeyboardInterrupt that lands in ``Popen._wait`` between its
    lock's ``acquire`` and the ``try`` that releases it leaves that lock held, and every later
    ``wait()`` then blocks for ever, ``poll()`` says it still runs (a run of
    ``tests/reliability/test_start_interrupt.py`` hung so). ``waitpid`` needs no lock."""
    deadline = None if limit_s is None else time.monotonic() + limit_s
    pause = 0.0002
    while proc.returncode is None:
        try:
            pid, status = os.waitpid(proc.pid, 0 if deadline is None else os.WNOHANG)
        except ChildProcessError:  # reaped meanwhile by Popen itself
            return True
        if pid == proc.pid:
            proc.returncode = os.waitstatus_to_exitcode(status)
            return True
        if deadline is not None and time.monotonic() >= deadline:
            return False
        time.sleep(pause)
        pause = min(pause * 2, 0.01)
    return True


def pid_alive(pid: int) -> bool:
    """Whether a process of that pid exists (one of another user's counts as alive)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
