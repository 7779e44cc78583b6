"""What one variant's trusted tests leave in the judge's process, put back before the next's.

Why: the judge runs the tests of every variant of a batch (prove's mutants) one after another
in its own process. A process forked for each variant left nothing behind, but cost 4.3 of a
variant's 10.7 ms (add-markdown-table-alignment, 93 mutants, one judge and child on one CPU:
the fork, a thousand copy-on-write faults, the exit): the most of any one part of a mutant.

What may leave state here is only the task's trusted tests (and their helpers): the code under
test runs in the child, and reaches this process as plain values and references the child
answers for, never as code. So this is fidelity, not the boundary: a variant must be judged as
it would be alone, in a fresh judge. Before each variant :class:`Leftovers` notes the state a
test can change that another test could read, and afterwards puts it back:

* the modules the tests imported from the trusted tree, the proxies of the code under test
  and any module a test made by hand (dropped: the next variant imports its own, fresh); a
  module of the standard library or an installed package a test imported stays, as it would
  in any test run that imports it once (re-importing an extension module is not always
  possible), and a module the tests replaced or removed is put back;
* the import system (``sys.path``, ``sys.meta_path``: this variant's finder of the code under
  test goes), the working directory, the environment (and ``time.tzset``), the builtins, the
  attributes of ``unittest.TestCase``, mock patches started and never stopped, signal
  handlers and timers, warnings filters, standard streams and hooks, the recursion limit,
  the cycle collector's settings, the root logger's handlers and level, the sockets' default
  timeout, the resource limits, and the state of ``random``, ``decimal`` and ``locale``
  where the tests use them.

A module's own attributes that a test assigns itself (not through ``mock.patch``, which is
undone) are not noted: they would reach the next test of the same run as well.

What cannot be put back ends the batch after the variant, whose own verdict stands (it ran
from a clean state): a thread the tests left running, a hard resource limit they lowered.
The grader then grades the rest of the batch apart, each in a judge of its own
(``judge_variants`` returns fewer verdicts).
"""

from __future__ import annotations

import _locale
import _signal
import builtins
import gc
import os
import signal
import socket
import sys
import unittest
from typing import Any

from endstate_harness.graders.judge.proxies import RemoteModule
from endstate_harness.graders.judge.witness import _real

_MISSING = object()

_LIMITS = ("RLIMIT_AS", "RLIMIT_CORE", "RLIMIT_CPU", "RLIMIT_DATA", "RLIMIT_FSIZE",
           "RLIMIT_NOFILE", "RLIMIT_NPROC", "RLIMIT_STACK")
"""The resource limits a test may lower (for a test of its own code's limits) and leave."""

_HOOKS = ("stdin", "stdout", "stderr", "excepthook", "displayhook", "unraisablehook",
          "breakpointhook")
"""The ``sys`` attributes a test may swap (a stream, a hook) and forget to swap back."""


def _threads() -> int:
    """This process's threads, as the kernel counts them (also one ``_thread`` started)."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return 0  # no /proc: a left thread goes unseen, as on any system without it


def _environ() -> dict[Any, Any]:
    """The environment as the process holds it (undecoded, which is cheap to compare)."""
    data = getattr(os.environ, "_data", None)
    return dict(data) if isinstance(data, dict) else {k.encode(): v.encode()
                                                       for k, v in os.environ.items()}


def _made_by_tests(module: Any, trusted: str) -> bool:
    """A module of the trusted tree (a test, a helper), a proxy of the code under test, or one
    made by hand (no import found it: a test's stand-in for a module)."""
    if isinstance(module, RemoteModule) or getattr(module, "__spec__", None) is None:
        return True
    places = [getattr(module, "__file__", None), *(getattr(module, "__path__", None) or [])]
    return any(isinstance(p, str) and _real(p).startswith(trusted + os.sep) for p in places)


class Leftovers:
    """The state one variant's tests may change, noted before they run (:meth:`restore`)."""

    def __init__(self, trusted: str) -> None:
        self.trusted = _real(trusted)
        self.modules = dict(sys.modules)
        self.path = list(sys.path)
        self.meta_path = list(sys.meta_path)
        self.path_hooks = list(sys.path_hooks)
        self.cwd = os.getcwd()
        self.environ = _environ()
        self.builtins = dict(vars(builtins))
        self.case = dict(vars(unittest.TestCase))
        self.hooks = {name: getattr(sys, name, None) for name in _HOOKS}
        self.recursion = sys.getrecursionlimit()
        self.switch = sys.getswitchinterval()
        self.trace = (sys.gettrace(), sys.getprofile())
        self.gc = (gc.isenabled(), gc.get_threshold())
        # the C module's own calls: signal's wrap every number in an enum (most of the cost)
        self.signals = {s: _signal.getsignal(s) for s in _signal.valid_signals()
                        if s not in (signal.SIGKILL, signal.SIGSTOP)}
        self.timers = {t: signal.getitimer(t)
                       for t in (signal.ITIMER_REAL, signal.ITIMER_VIRTUAL, signal.ITIMER_PROF)}
        self.threads = _threads()
        warnings = sys.modules.get("warnings")
        self.filters = list(warnings.filters) if warnings is not None else None
        self.random = _random_state()
        self.decimal = _decimal_context()
        self.locale = _locale_setting()
        self.timeout = socket.getdefaulttimeout()
        self.digits = sys.get_int_max_str_digits()
        self.logging = _logging_state()
        self.limits = _limits()

    def restore(self) -> str | None:
        """Put back what the variant's tests changed; why the batch must stop, if it must."""
        _stop_patches()
        self._modules()
        sys.path[:] = self.path
        sys.meta_path[:] = self.meta_path
        sys.path_hooks[:] = self.path_hooks
        if os.getcwd() != self.cwd:
            os.chdir(self.cwd)
        if _environ() != self.environ:
            tz = os.environ.get("TZ")
            before = {os.fsdecode(k): os.fsdecode(v) for k, v in self.environ.items()}
            os.environ.clear()
            os.environ.update(before)
            if tz != before.get("TZ"):
                import time  # deferred: only a test that changed TZ needs it

                time.tzset()
        _put_back(builtins, self.builtins)
        _put_back(unittest.TestCase, self.case)
        for name, value in self.hooks.items():
            if getattr(sys, name, None) is not value:
                setattr(sys, name, value)
        sys.setrecursionlimit(self.recursion)
        sys.setswitchinterval(self.switch)
        tracers: tuple[tuple[Any, Any, Any], ...] = (
            (sys.gettrace(), sys.settrace, self.trace[0]),
            (sys.getprofile(), sys.setprofile, self.trace[1]))
        for now, put, noted in tracers:
            if now is not noted:
                try:
                    put(noted)
                except TypeError:  # a profiler written in C (cProfile's) is set by itself
                    put(None)
        (gc.enable if self.gc[0] else gc.disable)()
        gc.set_threshold(*self.gc[1])
        for timer, running in self.timers.items():
            if running == (0.0, 0.0) and signal.getitimer(timer) != running:
                signal.setitimer(timer, 0)  # a timer a test set and left
        for number, handler in self.signals.items():
            if handler is not None and _signal.getsignal(number) is not handler:
                try:
                    _signal.signal(number, handler)
                except (OSError, ValueError):  # one the C library keeps: none a test set
                    pass
        warnings = sys.modules.get("warnings")
        if warnings is not None and self.filters is not None:
            warnings.filters[:] = self.filters
            warnings._filters_mutated()  # type: ignore[attr-defined]
        _set_random(self.random)
        _set_decimal(self.decimal)
        _set_locale(self.locale)
        socket.setdefaulttimeout(self.timeout)
        sys.set_int_max_str_digits(self.digits)
        _set_logging(self.logging)
        if not _set_limits(self.limits):
            return "a trusted test lowered a resource limit for good"
        if _threads() > self.threads:
            return "a trusted test left a thread running"
        return None

    def _modules(self) -> None:
        for name, module in list(sys.modules.items()):
            before = self.modules.get(name)
            if module is before:
                continue
            if before is not None:
                sys.modules[name] = before  # replaced by a test: the original back
            elif _made_by_tests(module, self.trusted):
                del sys.modules[name]  # the next variant imports its own
        for name, module in self.modules.items():
            if name not in sys.modules:
                sys.modules[name] = module  # removed by a test


def _put_back(owner: Any, before: dict[str, Any]) -> None:
    """``owner``'s attributes as ``before`` noted them: those added dropped, the rest set."""
    now = vars(owner)
    for key in [k for k in now if k not in before]:
        delattr(owner, key)
    for key, value in before.items():
        if now.get(key, _MISSING) is not value:
            setattr(owner, key, value)


def _stop_patches() -> None:
    mock = sys.modules.get("unittest.mock")
    if mock is not None:
        mock.patch.stopall()  # what a test started with patch(...).start() and left


def _random_state() -> Any:
    rand = sys.modules.get("random")
    return rand.getstate() if rand is not None else None


def _set_random(state: Any) -> None:
    rand = sys.modules.get("random")
    if rand is not None and state is not None and rand.getstate() != state:
        rand.setstate(state)


def _decimal_context() -> Any:
    dec = sys.modules.get("decimal")
    return dec.getcontext().copy() if dec is not None else None


def _set_decimal(context: Any) -> None:
    dec = sys.modules.get("decimal")
    if dec is not None:  # imported by this variant's tests: the context a fresh import has
        dec.setcontext((context if context is not None else dec.DefaultContext).copy())


def _locale_setting() -> str | None:
    try:
        return _locale.setlocale(_locale.LC_ALL, None)
    except Exception:  # a locale this libc cannot name: left as it is
        return None


def _set_locale(setting: str | None) -> None:
    if setting is None:
        return
    try:
        if _locale.setlocale(_locale.LC_ALL, None) != setting:
            _locale.setlocale(_locale.LC_ALL, setting)
    except Exception:  # as above
        pass


def _logging_state() -> Any:
    logging = sys.modules.get("logging")
    if logging is None:
        return None
    root = logging.getLogger()
    return root, list(root.handlers), root.level, root.manager.disable


def _set_logging(state: Any) -> None:
    logging = sys.modules.get("logging")
    if logging is None:
        return
    if state is None:  # imported by this variant's tests: as a fresh import leaves it
        state = (logging.getLogger(), [], logging.WARNING, 0)
    root, handlers, level, disable = state
    root.handlers[:] = handlers
    root.setLevel(level)
    logging.disable(disable)


def _limits() -> dict[int, tuple[int, int]]:
    try:
        import resource  # deferred: POSIX only, as the judge's own memory cap
    except ImportError:
        return {}
    out = {}
    for name in _LIMITS:
        number = getattr(resource, name, None)
        if number is not None:
            try:
                out[number] = resource.getrlimit(number)
            except (OSError, ValueError):
                pass
    return out


def _set_limits(limits: dict[int, tuple[int, int]]) -> bool:
    """Whether every limit is back (a hard limit a test lowered cannot be raised again)."""
    if not limits:
        return True
    import resource  # deferred: as in _limits

    for number, limit in limits.items():
        try:
            if resource.getrlimit(number) != limit:
                resource.setrlimit(number, limit)
        except (OSError, ValueError):
            return False
    return True
