"""The judge process: runs the trusted tests against the code under test, which runs elsewhere.

Started by :func:`endstate_harness.graders.judge.grader.judged_tests` on the host, never in the
sandbox,
in a folder holding only trusted files (the pristine fixture's tests and the holdout, as the
task shipped them). Its stdin and stdout are relayed to the child in the sandbox; the package
under test is imported through :class:`~endstate_harness.graders.judge.finder.RemoteFinder`, so no
line of the agent's code runs in this process. The report goes to a separate pipe whose number
is passed on the command line, so nothing the child sends can be mistaken for it.

Usage (internal): ``python -m endstate_harness.graders.judge.main CONFIG_JSON``.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
import unittest
from typing import Any

from endstate_harness.graders.judge.finder import install
from endstate_harness.graders.judge.remote import Conversation
from endstate_harness.graders.judge.witness import (
    Tally,
    embedded_line,
    file_of,
    message_of,
    watch,
    where_failed,
)

MAX_DETAIL = 2000
MAX_MESSAGE = 400


class _Collector(unittest.TestResult):
    """Records every outcome by test id, with a short reason for the ones that did not pass,
    and what the witness saw: the test's file, the assertions it executed, and for a test that
    did not pass the assertion's message (or the exception) and the line in the test."""

    def __init__(self, tally: Tally, trusted: str) -> None:
        super().__init__()
        self.outcomes: list[dict[str, Any]] = []
        self.tally = tally
        self.trusted = trusted
        self.started = 0

    def startTest(self, test: unittest.TestCase) -> None:
        super().startTest(test)
        self.started = self.tally.count

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

    def addSuccess(self, test: unittest.TestCase) -> None:
        self._add(test, "passed")

    def addFailure(self, test: unittest.TestCase, err: Any) -> None:
        self._add(test, "failed", _format(err), err)

    def addError(self, test: unittest.TestCase, err: Any) -> None:
        self._add(test, "error", _format(err), err)

    def addSkip(self, test: unittest.TestCase, reason: str) -> None:
        self._add(test, "skipped", reason)

    def addExpectedFailure(self, test: unittest.TestCase, err: Any) -> None:
        self._add(test, "expected_failure", _format(err))

    def addUnexpectedSuccess(self, test: unittest.TestCase) -> None:
        self._add(test, "unexpected_success")

    def addSubTest(self, test: Any, subtest: Any, err: Any) -> None:
        if err is not None:
            kind = "failed" if issubclass(err[0], test.failureException) else "error"
            self._add(subtest, kind, _format(err), err)


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
    tally = watch(trusted)  # before the proxies' finder, which stays first
    conv = Conversation(
        0, 1, time.monotonic() + float(config["timeout_s"]), float(config["call_timeout_s"])
    )
    install(conv, set(config["modules"]), config.get("helpers") or {})
    # The tests' own prints must not reach the channel: fd 1 is the child's stdin.
    sys.stdout = sys.stderr
    loader = unittest.TestLoader()
    suite = loader.discover(start, pattern=config["pattern"], top_level_dir=top)
    result = _Collector(tally, trusted)
    suite.run(result)
    for test, reason in result.errors:  # import failures of test modules land here unseen
        if not any(o["id"] == test.id() for o in result.outcomes):
            result.outcomes.append({"id": test.id(), "outcome": "error", "detail": reason,
                                    "file": file_of(test, trusted), "assertions": 0,
                                    "message": " ".join(reason.split()[-40:])})
    return {"outcomes": result.outcomes, "child": conv.gone, "python": sys.version.split()[0]}


def main() -> None:
    config = json.loads(sys.argv[1])
    report_fd = int(config["report_fd"])
    try:
        report = run(config)
    except BaseException as exc:  # the judge's own failure: reported, never a pass
        report = {"fatal": f"{type(exc).__name__}: {exc}"[:MAX_DETAIL]}
    with os.fdopen(report_fd, "w", encoding="utf-8") as out:
        json.dump(report, out)
    os._exit(0)  # no atexit, no interpreter teardown that could touch the proxies


if __name__ == "__main__":
    main()
