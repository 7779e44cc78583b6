"""The judge process: runs the trusted tests against the code under test, which runs elsewhere.

Started by :func:`endstate_harness.graders.judge.grader.judged_tests` on the host, never in the
sandbox, in a folder holding only trusted files (the pristine fixture's tests and the holdout, as
the task shipped them), *before* the child: it makes itself undumpable (no process of its user
can read its memory or descriptors), reads every trusted file into memory
(:mod:`~endstate_harness.graders.judge.trusted`, which answers every later import or read of
them), says so on its stdin (a socket to the grader) and only then receives the child's channel
as its stdin and stdout. The package under test is imported through
:class:`~endstate_harness.graders.judge.finder.RemoteFinder`, so no line of the agent's code runs
in this process. The report goes to a separate pipe whose number is passed on the command line,
so nothing the child sends can be mistaken for it; the grader accepts it only from a judge that
exited normally.

Usage (internal): ``python -m endstate_harness.graders.judge.main CONFIG_JSON``.
"""

from __future__ import annotations

import ctypes
import json
import os
import socket
import sys
import time
import traceback
import unittest
from typing import Any

from endstate_harness.graders.judge.finder import install
from endstate_harness.graders.judge.remote import Conversation
from endstate_harness.graders.judge.trusted import TrustedFiles

MAX_DETAIL = 2000


class _Collector(unittest.TestResult):
    """Records every outcome by test id, with a short reason for the ones that did not pass."""

    def __init__(self) -> None:
        super().__init__()
        self.outcomes: list[dict[str, Any]] = []

    def _add(self, test: unittest.TestCase, outcome: str, detail: str = "") -> None:
        self.outcomes.append({"id": test.id(), "outcome": outcome, "detail": detail[-MAX_DETAIL:]})

    def addSuccess(self, test: unittest.TestCase) -> None:
        self._add(test, "passed")

    def addFailure(self, test: unittest.TestCase, err: Any) -> None:
        self._add(test, "failed", _format(err))

    def addError(self, test: unittest.TestCase, err: Any) -> None:
        self._add(test, "error", _format(err))

    def addSkip(self, test: unittest.TestCase, reason: str) -> None:
        self._add(test, "skipped", reason)

    def addExpectedFailure(self, test: unittest.TestCase, err: Any) -> None:
        self._add(test, "expected_failure", _format(err))

    def addUnexpectedSuccess(self, test: unittest.TestCase) -> None:
        self._add(test, "unexpected_success")

    def addSubTest(self, test: Any, subtest: Any, err: Any) -> None:
        if err is not None:
            kind = "failed" if issubclass(err[0], test.failureException) else "error"
            self._add(subtest, kind, _format(err))


def _format(err: Any) -> str:
    kind, value, tb = err
    lines = traceback.format_exception(kind, value, tb, limit=-3)
    return "".join(lines).strip()


def run(config: dict[str, Any]) -> dict[str, Any]:
    """Discover and run the trusted tests; the report the grader reads."""
    trusted = config["trusted_dir"]
    top = os.path.normpath(os.path.join(trusted, config.get("top_level_dir", ".")))
    start = os.path.normpath(os.path.join(trusted, config["start_dir"]))
    sys.path.insert(0, top)
    conv = Conversation(
        0, 1, time.monotonic() + float(config["timeout_s"]), float(config["call_timeout_s"])
    )
    install(conv, set(config["modules"]), config.get("helpers") or {})
    # The tests' own prints must not reach the channel: fd 1 is the child's stdin.
    sys.stdout = sys.stderr
    loader = unittest.TestLoader()
    suite = loader.discover(start, pattern=config["pattern"], top_level_dir=top)
    result = _Collector()
    suite.run(result)
    for test, reason in result.errors:  # import failures of test modules land here unseen
        if not any(o["id"] == test.id() for o in result.outcomes):
            result.outcomes.append({"id": test.id(), "outcome": "error", "detail": reason})
    return {"outcomes": result.outcomes, "child": conv.gone, "python": sys.version.split()[0]}


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


def main() -> None:
    config = json.loads(sys.argv[1])
    report_fd = int(config["report_fd"])
    try:
        undumpable()
        TrustedFiles(config["trusted_dir"]).install()  # before any code of the end state starts
        connect()
        report = run(config)
    except BaseException as exc:  # the judge's own failure: reported, never a pass
        report = {"fatal": f"{type(exc).__name__}: {exc}"[:MAX_DETAIL]}
    with os.fdopen(report_fd, "w", encoding="utf-8") as out:
        json.dump(report, out)
    os._exit(0)  # no atexit, no interpreter teardown that could touch the proxies


if __name__ == "__main__":
    main()
