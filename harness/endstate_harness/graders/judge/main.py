"""The judge process: runs the trusted tests against the code under test, which runs elsewhere.

Usage (internal): ``python -m endstate_harness.graders.judge.main CONFIG_JSON``.
"""

from __future__ import annotations

import ctypes
import fnmatch
import json
import os
import signal
import socket
import sys
import time
import traceback
import unittest
from typing import Any

from endstate_harness.graders.judge.assertions import guard_assertions
from endstate_harness.graders.judge.finder import install
from endstate_harness.graders.judge.isolation import isolating, ordered
from endstate_harness.graders.judge.leftovers import Leftovers
from endstate_harness.graders.judge.proxies import PlainValuesOnly, is_reference
from endstate_harness.graders.judge.remote import Conversation, NotIsolated
from endstate_harness.graders.judge.trusted import TrustedFiles
from endstate_harness.graders.judge.witness import (
    Tally,
    embedded_line,
    file_of,
    message_of,
    precompile,
    watch,
    where_failed,
)

MAX_DETAIL = 2000
MEMORY_BYTES = 1 << 30
"""Address space the judge may take beyond what it has when it starts (1 GiB)."""


class JudgeOverrun(BaseException):
    """A test made the judge itself work longer than the call deadline (CPU time). A
    ``BaseException``, so that no ``except Exception`` in the test swallows it."""


def _cap_memory() -> None:
    """Cap the judge's address space: a reply that would need more is a MemoryError (the
    case fails) rather than the host's memory."""
    try:
        import resource  # deferred: POSIX only, and only the judge process needs it

        with open("/proc/self/statm", encoding="ascii") as statm:
            size = int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        cap = size + MEMORY_BYTES
        if hard != resource.RLIM_INFINITY:
            cap = min(cap, hard)
        resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    except (ImportError, OSError, ValueError):
        pass  # no /proc or no rlimits here: the harness's wall clock still ends the judge
MAX_MESSAGE = 800
"""Longest failure message kept per test (cut between words, with a count of the rest): the
judge's own refusals say what to do instead, in about 500 characters."""


class _Collector(unittest.TestResult):
    """Records every outcome by test id, with a short reason for the ones that did not pass,
    and what the witness saw: the test's file, the assertions it executed, and for a test that
    did not pass the assertion's message (or the exception) and the line in the test."""

    def __init__(self, tally: Tally, trusted: str, cpu_budget_s: float = 0.0,
                 brief: bool = False) -> None:
        super().__init__()
        self.brief = brief
        """A variant's run: no formatted traceback per failure (its verdict reads only each
        test's outcome, file, line and message; formatting cost a few ms per mutant)."""
        self.outcomes: list[dict[str, Any]] = []
        self.tally = tally
        self.trusted = trusted
        self.started = 0
        self.cpu_budget_s = cpu_budget_s
        self.judge_conv: Conversation | None = None
        """The conversation whose child each test gets a process of its own in."""

    def stopTest(self, test: unittest.TestCase) -> None:
        if self.cpu_budget_s > 0:
            signal.setitimer(signal.ITIMER_PROF, 0)
        if self.judge_conv is not None:
            self.judge_conv.close_scope()
        super().stopTest(test)

    def startTest(self, test: unittest.TestCase) -> None:
        super().startTest(test)
        if self.judge_conv is not None:  # the test's own process (isolation.py says why)
            self.judge_conv.open_scope()
        self.started = self.tally.count
        if self.cpu_budget_s > 0:
            signal.setitimer(signal.ITIMER_PROF, self.cpu_budget_s)

    def _add(self, test: unittest.TestCase, outcome: str, detail: str = "",
             err: Any = None) -> None:
        record: dict[str, Any] = {
            "id": test.id(), "outcome": outcome, "detail": detail[-MAX_DETAIL:],
            "file": file_of(test, self.trusted), "assertions": self.tally.count - self.started,
        }
        if err is not None:
            message = message_of(err[0], err[1], MAX_MESSAGE)
            where, line = where_failed(err[2], self.trusted)
            inner = embedded_line(err[1], record["file"], self.trusted)
            if inner is not None:  # a module that failed to import: its own line
                where, line = record["file"], inner
            if line is not None and where == record["file"]:
                record["line"] = line
            elif line is not None:
                message += f" (at {where}:{line})"
            record["message"] = message
        elif outcome == "skipped":
            record["message"] = " ".join(detail.split())[:MAX_MESSAGE]
        self.outcomes.append(record)

    def _format(self, err: Any) -> str:
        return "" if self.brief else _format(err)

    def addSuccess(self, test: unittest.TestCase) -> None:
        self._add(test, "passed")

    def _rejected(self) -> None:
        # what unittest's own failfast does in the methods these override (without calling
        # them): a variant's run ends at its first rejection
        if self.failfast:
            self.stop()

    def addFailure(self, test: unittest.TestCase, err: Any) -> None:
        self._add(test, "failed", self._format(err), err)
        self._rejected()

    def addError(self, test: unittest.TestCase, err: Any) -> None:
        refused = isinstance(err[1], PlainValuesOnly | JudgeOverrun | NotIsolated)
        self._add(test, "failed" if refused else "error", self._format(err), err)
        self._rejected()

    def addSkip(self, test: unittest.TestCase, reason: str) -> None:
        self._add(test, "skipped", reason)

    def addExpectedFailure(self, test: unittest.TestCase, err: Any) -> None:
        self._add(test, "expected_failure", self._format(err))

    def addUnexpectedSuccess(self, test: unittest.TestCase) -> None:
        self._add(test, "unexpected_success")
        self._rejected()

    def addSubTest(self, test: Any, subtest: Any, err: Any) -> None:
        if err is not None:
            failed = (test.failureException, PlainValuesOnly, JudgeOverrun, NotIsolated)
            kind = "failed" if issubclass(err[0], failed) else "error"
            self._add(subtest, kind, self._format(err), err)
            self._rejected()


def _format(err: Any) -> str:
    kind, value, tb = err
    lines = traceback.format_exception(kind, value, tb, limit=-3)
    return "".join(lines).strip()


def _overrun(budget_s: float) -> None:
    def handler(signum: int, frame: Any) -> None:
        raise JudgeOverrun(
            f"the judge's own work for this test (comparing values, formatting a failure) took "
            f"more than {budget_s:g} s of CPU: a value the code under test returned may be "
            "built to be costly to compare"
        )

    signal.signal(signal.SIGPROF, handler)


def run_on(cpu: object) -> None:
    """This process (and what it forks from now on) on CPU ``cpu`` alone, if it may: the one
    its child is asked onto too (``launch.shared_cpu`` chose it and says why)."""
    if type(cpu) is not int:
        return
    try:
        os.sched_setaffinity(0, {cpu})
    except (OSError, ValueError, OverflowError):
        pass  # not allowed here (another CPU set): only speed depends on it


def run(config: dict[str, Any], files: dict[str, bytes] | None = None) -> dict[str, Any]:
    """Discover and run the trusted tests; the report the grader reads. ``files``: the trusted
    files as read at the judge's start (:class:`TrustedFiles`), which the tests are compiled
    from. With ``variants`` in the config: one report per variant (:func:`run_variants`)."""
    _cap_memory()
    run_on(config.get("cpu"))
    cpu_budget_s = float(config["call_timeout_s"])
    _overrun(cpu_budget_s)
    guard_assertions(unittest.TestCase, is_reference)
    trusted = config["trusted_dir"]
    top = os.path.normpath(os.path.join(trusted, config.get("top_level_dir", ".")))
    sys.path.insert(0, top)
    tally = watch(trusted, files)  # before the proxies' finder, which stays first
    # The tests' own prints must not reach the channel: fd 1 is the child's stdin.
    sys.stdout = sys.stderr
    if config.get("variants"):
        precompile(files or {})
        fnmatch.fnmatch("warm.py", config["pattern"])  # compiled once, not in every variant
        return run_variants(config, tally, top)
    return _run_tests(config, tally, top, None)


def _conversation(config: dict[str, Any]) -> Conversation:
    """A conversation with the child over fds 0 and 1, within the run's deadline."""
    return Conversation(
        0, 1, time.monotonic() + float(config["timeout_s"]), float(config["call_timeout_s"])
    )


def _run_tests(config: dict[str, Any], tally: Tally, top: str,
               variant: dict[str, str | None] | None, pin: bool = True,
               limit_s: float | None = None) -> dict[str, Any]:
    """One run of the trusted tests against the child (in ``variant``'s process, if given);
    ``pin``: first ask the child onto the judge's CPU (the first variant's run does it for
    every variant the child forks); ``limit_s``: the variant's time bound (its report then
    says ``timed_out`` when it was cut there and the child could go on)."""
    trusted = config["trusted_dir"]
    conv = _conversation(config)
    whole = cut_at = conv.deadline
    if pin and config.get("cpu") is not None:
        try:
            conv.request("pin", cpu=config["cpu"])
        except Exception as exc:  # the child did not answer: said, never a pass
            return {"fatal": f"the child did not start: {type(exc).__name__}: {exc}",
                    "child": conv.gone}
    if variant is not None:
        try:
            conv.request("variant", files=variant,
                         limit_s=None if limit_s is None else limit_s + CHILD_MARGIN_S)
        except Exception as exc:  # the variant could not start: said, never a pass
            return {"fatal": f"the variant did not start: {type(exc).__name__}: {exc}",
                    "child": conv.gone}
    began = time.monotonic()  # the tests' own time, after the child's work for the variant
    if limit_s is not None:  # (its first fork also warms the child up: no later one does)
        cut_at = conv.deadline = min(whole, began + limit_s)
    install(conv, set(config["modules"]), config.get("helpers") or {})
    start = os.path.normpath(os.path.join(trusted, config["start_dir"]))
    loader = unittest.TestLoader()
    suite = isolating(ordered(
        loader.discover(start, pattern=config["pattern"], top_level_dir=top),
        str(config.get("order") or "")))
    result = _Collector(tally, trusted, float(config["call_timeout_s"]), brief=variant is not None)
    result.judge_conv = conv
    # a variant asks only whether the tests reject it: the first failure says so
    result.failfast = variant is not None
    suite.run(result)
    for test, reason in result.errors:  # import failures of test modules land here unseen
        if not any(o["id"] == test.id() for o in result.outcomes):
            result.outcomes.append({"id": test.id(), "outcome": "error", "detail": reason,
                                    "file": file_of(test, trusted), "assertions": 0,
                                    "message": " ".join(reason.split()[-40:])})
    while conv.scopes:  # a scope the suite left open (it never should): ended all the same
        conv.close_scope()
    gone = conv.gone
    report: dict[str, Any] = {"outcomes": result.outcomes, "python": sys.version.split()[0],
                              "ran_s": time.monotonic() - began}
    if limit_s is not None and gone and conv.expired:
        # cut at its bound: the process it was forked from ends it, says so, and forks the
        # next (an answer that does not come stops the batch, as a hang did)
        cut = conv.await_ended(cut_at + CHILD_MARGIN_S + ENDED_GRACE_S)
        return {**report, "child": None if cut else gone, "timed_out": limit_s}
    conv.deadline = whole  # its bound is for its code, not for ending it
    if variant is not None and not gone:
        try:
            conv.request("end")
        except Exception as exc:  # its outcomes stand; the batch stops (state unknown)
            gone = f"the variant's process did not end cleanly: {type(exc).__name__}"
            if conv.ended:  # the child ended it at its bound as its last test was done (its
                gone = None  # clock starts at the fork, a moment before this one's): it goes on
    return {**report, "child": gone}


def run_variants(config: dict[str, Any], tally: Tally, top: str) -> dict[str, Any]:
    """The trusted tests once per variant of the tree (prove's mutants), one after another in
    this process (fresh test modules, fresh proxies), each against a process the child forks
    for it, with what one variant's tests left put back before the next (:mod:`leftovers`
    says what, and why not a process of the judge's own per variant). The batch stops at the
    first variant whose child did not end cleanly (hung, crashed: the child's protocol state
    is then unknown) or whose tests left what cannot be put back; the grader grades the rest
    apart.

    With a ``bound`` (factor, floor in seconds), a variant that runs past ``max(factor × the
    tests' time on the tree as it is, floor)`` is cut there and the batch goes on
    (:func:`_bounded`): a mutant that loops costs a few of the solution's own runs rather
    than the whole call limit, and no later mutant is left unrun for it."""
    reports: list[dict[str, Any]] = []
    bound = _bound_of(config.get("bound"))
    limit = [bound[1] if bound is not None else 0.0]
    for index, variant in enumerate(config["variants"]):
        report, stop = _bounded(config, tally, top, variant, index == 0, bound, limit)
        if report is not None:
            reports.append(report)
        if stop or report is None:
            break
    if reports and not reports[-1].get("child"):
        _settle(config)
    return {"variants": reports, "python": sys.version.split()[0]}


CHILD_MARGIN_S = 0.02
"""The child kills a variant's process this long past its bound, on its own clock (started at
the fork, a moment before the judge's, started by the variant's answer): after the judge cut
it, as a rule, and soon after, since every moment between the two is paid by every mutant
that loops. When the child is first (the judge's process was not scheduled in time), its word
says it cut the variant (``cut``), and the judge counts that run as cut as well."""
ENDED_GRACE_S = 5.0
"""How long past the child's own limit the judge waits for its word that it ended the variant."""


def _bound_of(raw: Any) -> tuple[float, float] | None:
    """(factor, floor_s) from the grader's ``bound``; None for none (or anything malformed)."""
    if (isinstance(raw, list) and len(raw) == 2
            and all(type(x) in (int, float) and x > 0 for x in raw)):
        return float(raw[0]), float(raw[1])
    return None


def _once(config: dict[str, Any], tally: Tally, top: str, variant: dict[str, str | None],
          pin: bool, limit_s: float | None = None) -> tuple[dict[str, Any], bool]:
    """One variant's run: its report, and whether the batch must stop."""
    before = Leftovers(config["trusted_dir"])
    try:
        report = _run_tests(config, tally, top, variant, pin=pin, limit_s=limit_s)
    except BaseException as exc:  # the judge's own failure: reported, never a pass
        report = {"fatal": f"{type(exc).__name__}: {exc}"[:MAX_DETAIL], "child": "?"}
    left = before.restore()
    return report, bool(report.get("child") or "fatal" in report or left)


_PASSING = ("passed", "skipped", "expected_failure")


def _reference(config: dict[str, Any], tally: Tally, top: str,
               pin: bool = False) -> tuple[float | None, bool]:
    """The tests on the tree as it is (a variant that changes nothing), timed as a variant's
    tests are: (seconds, or None when they did not all pass; whether the batch must stop).
    The time starts once the variant's process is forked, as a variant's bound does."""
    report, stop = _once(config, tally, top, {}, pin)
    passed = bool(report.get("outcomes")) and all(
        o.get("outcome") in _PASSING for o in report["outcomes"])
    return (report["ran_s"] if passed and not stop else None), stop


def _bounded(config: dict[str, Any], tally: Tally, top: str, variant: dict[str, str | None],
             pin: bool, bound: tuple[float, float] | None, limit: list[float],
             ) -> tuple[dict[str, Any] | None, bool]:
    """One variant, under ``limit[0]`` (the batch's bound, updated here) when there is a
    ``bound``: its report (None: not judged here, the caller grades it apart) and whether the
    batch stops.

    The reference, the tests' time on the tree as it is, is taken only once a variant is cut
    (until then the bound is the floor): a batch whose mutants all end pays nothing for it.
    Why a cut is confirmed before it counts: the bound is wall-clock time, and a machine
    under load can stall a run that would have passed. After a cut the reference is taken
    at once, under the load of that moment, and the variant runs again under the bound it
    gives; a variant is reported ``timed_out`` only when two of its runs each went past
    ``max(factor × a reference taken right beside that run, floor)``. A survivor is then
    reported killed only if the machine stalled it past its bound twice, each time beside a
    run of the solution that stayed within a fraction of it; a mutant that loops costs two
    or three bounds and as many references."""
    if bound is None:
        return _once(config, tally, top, variant, pin)
    factor, floor = bound
    current, basis = limit[0], None  # basis: the reference taken just before this run
    report, stop = _once(config, tally, top, variant, pin, current)
    counted: list[tuple[float, float]] = []  # (the bound it ran past, the reference beside)
    while "timed_out" in report:
        if stop:  # cut, and the child cannot go on: graded apart, under the whole limit
            return None, True
        reference, stop = _reference(config, tally, top)
        if stop or reference is None:  # the solution does not pass here: nothing concluded
            return None, True
        fresh = max(factor * reference, floor)
        limit[0] = fresh
        if basis is not None or current >= fresh:
            counted.append((current, reference if basis is None else basis))
        if len(counted) == 2:
            report["timed_out"] = (
                "killed: timed out: ran past its time bound twice ("
                + ", then ".join(f"{b:.3g} s" for b, _ in counted)
                + f": {factor:g}x the solution's own run in this judge beside each, "
                + ", ".join(f"{r:.3g} s" for _, r in counted) + f"; at least {floor:g} s)")
            return report, False
        current, basis = fresh, reference
        report, stop = _once(config, tally, top, variant, False, current)
    return report, stop


def _settle(config: dict[str, Any]) -> None:
    """Wait until the child has written the last variant's files back: the grader ends the
    child as soon as this judge reports, which could cut that write short (a truncated file
    in the sandbox's tree). A child that does not know the request (an older vendored copy)
    answers with an error, and is waited for as before: not at all."""
    conv = _conversation(config)
    try:
        conv.request("settle")
    except Exception:  # the verdicts stand either way
        pass


def undumpable() -> None:
    """No process of this user may read this one's memory or descriptors (``/proc/PID/fd``,
    ptrace) any more; the report pipe is among them."""
    if ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0) != 0:  # PR_SET_DUMPABLE, 0
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_DUMPABLE) failed")


def connect() -> None:
    """Say the trusted files are read (fd 0 is a socket to the grader), then take the child's
    channel, sent over it, as stdin and stdout."""
    control = socket.socket(fileno=os.dup(0))
    try:
        control.sendall(b"R")
        _msg, fds, _flags, _addr = socket.recv_fds(control, 1, 2)
    finally:
        control.close()
    if len(fds) != 2:
        raise OSError("the grader sent no channel to the code under test")
    os.dup2(fds[0], 0)
    os.dup2(fds[1], 1)
    for fd in fds:
        os.close(fd)


def _payload(path: str | None) -> dict[str, Any]:
    """The configuration's large parts (variants, helpers), read from the file the grader
    wrote (see ``PAYLOAD_KEYS`` in the grader), before the child starts."""
    if path is None:
        return {}
    with open(path, encoding="utf-8") as source:
        loaded = json.load(source)
    return loaded if isinstance(loaded, dict) else {}


def main() -> None:
    config = json.loads(sys.argv[1])
    report_fd = int(config["report_fd"])
    try:
        undumpable()
        trusted = TrustedFiles(config["trusted_dir"])  # before any code of the end state starts
        trusted.install()
        config.update(_payload(config.pop("payload_file", None)))
        connect()
        report = run(config, trusted.files)
    except BaseException as exc:  # the judge's own failure: reported, never a pass
        report = {"fatal": f"{type(exc).__name__}: {exc}"[:MAX_DETAIL]}
    with os.fdopen(report_fd, "w", encoding="utf-8") as out:
        json.dump(report, out)
    os._exit(0)  # no atexit, no interpreter teardown that could touch the proxies


if __name__ == "__main__":
    main()
