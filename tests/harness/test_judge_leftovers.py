"""What one variant's trusted tests leave in the judge is put back before the next variant's
(``judge/leftovers.py``): each variant of a batch is judged as it would be alone."""

from __future__ import annotations

import textwrap
from pathlib import Path

from endstate_harness.graders import judged_tests
from endstate_harness.graders.judge.grader import judge_variants
from tests.harness.test_judge import _box, make_task
from tests.harness.test_judge_variants import SOLVED, WRONG

LEAVES_EVERYTHING = textwrap.dedent("""\
    import builtins
    import colorsys  # noqa: F401  (in sys.modules: replaced below)
    import decimal
    import gc
    import logging
    import os
    import resource
    import signal
    import socket
    import sys
    import tempfile
    import unittest
    import warnings
    from unittest import mock

    from pkg.calc import add
    from tests import helper_state


    def _alarm(signum, frame):
        raise AssertionError("an alarm another variant's test set")


    class LeavesStateTest(unittest.TestCase):
        def test_state(self):
            # what a fresh judge has ...
            self.assertEqual(add(2, 2), 4)
            self.assertEqual(helper_state.CALLS, [])
            self.assertIsNone(os.environ.get("ES_LEFT"))
            self.assertNotEqual(os.path.basename(os.getcwd()), "es-elsewhere")
            self.assertNotIn("/es-left", sys.path)
            self.assertFalse(hasattr(builtins, "es_left"))
            self.assertEqual(unittest.TestCase.maxDiff, 640)
            self.assertEqual(decimal.getcontext().prec, 28)
            self.assertEqual(textwrap_dedent("  x"), "x")
            self.assertTrue(hasattr(sys.modules.get("colorsys"), "rgb_to_hsv"))
            self.assertEqual(signal.getitimer(signal.ITIMER_REAL), (0.0, 0.0))
            self.assertIs(signal.getsignal(signal.SIGUSR1), signal.SIG_DFL)
            self.assertNotIn(("error", None, Warning, None, 0), warnings.filters)
            self.assertNotEqual(sys.getrecursionlimit(), 4321)
            self.assertTrue(gc.isenabled())
            self.assertEqual(logging.getLogger().level, logging.WARNING)
            self.assertFalse(logging.getLogger().handlers)
            self.assertIsNone(socket.getdefaulttimeout())
            soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
            self.assertNotEqual(soft, 200)
            # ... and what these tests then leave behind them
            helper_state.CALLS.append(1)
            os.environ["ES_LEFT"] = "1"
            elsewhere = os.path.join(tempfile.mkdtemp(), "es-elsewhere")
            os.mkdir(elsewhere)
            os.chdir(elsewhere)
            sys.path.append("/es-left")
            builtins.es_left = 1
            unittest.TestCase.maxDiff = None
            decimal.getcontext().prec = 3
            mock.patch("textwrap.dedent", return_value="patched").start()
            sys.modules["colorsys"] = type(sys)("colorsys")
            signal.signal(signal.SIGALRM, _alarm)
            signal.setitimer(signal.ITIMER_REAL, 0.3)
            signal.signal(signal.SIGUSR1, _alarm)
            warnings.simplefilter("error")
            sys.setrecursionlimit(4321)
            gc.disable()
            logging.basicConfig(level=logging.DEBUG)
            socket.setdefaulttimeout(3)
            resource.setrlimit(resource.RLIMIT_NOFILE, (200, hard))


    def textwrap_dedent(text):
        import textwrap
        return textwrap.dedent(text)
    """)


def _task(tmp_path: Path, test_source: str) -> Path:
    task = make_task(tmp_path / "task")
    holdout = task / "holdout" / "tests"
    (holdout / "helper_state.py").write_text("CALLS = []\n")
    (holdout / "test_state.py").write_text(test_source)
    return task


def _batch(task: Path, variants: list[str]) -> list[bool]:
    with _box("local", task / "fixture") as box:
        box.write_text("pkg/calc.py", SOLVED)
        box.seal()
        box.stage(task / "holdout")
        verdicts = judge_variants(box, [{"pkg/calc.py": v} for v in variants])
    return [v.passed for v in verdicts]


def _alone(task: Path, calc: str) -> bool:
    with _box("local", task / "fixture") as box:
        box.write_text("pkg/calc.py", calc)
        box.seal()
        box.stage(task / "holdout")
        return judged_tests(box).passed


def test_what_a_variants_tests_leave_never_reaches_the_next(tmp_path: Path) -> None:
    """The test checks the state a fresh judge has, then changes all of it: had any of it
    stayed, the next variant's run of the same test would fail."""
    task = _task(tmp_path, LEAVES_EVERYTHING)
    assert _alone(task, SOLVED) and not _alone(task, WRONG)
    assert _batch(task, [SOLVED, SOLVED, WRONG, SOLVED, SOLVED]) == [True, True, False, True,
                                                                     True]


LEAVES_A_THREAD = textwrap.dedent("""\
    import threading
    import time
    import unittest

    from pkg.calc import add


    class LeavesThreadTest(unittest.TestCase):
        def test_thread(self):
            threading.Thread(target=time.sleep, args=(3,), daemon=True).start()
            self.assertEqual(add(2, 2), 4)
    """)


def test_a_thread_left_running_ends_the_batch_after_its_variant(tmp_path: Path) -> None:
    """A thread cannot be put back: that variant's verdict stands (it ran from a clean
    state), and the rest are left to be graded apart."""
    task = _task(tmp_path, LEAVES_A_THREAD)
    assert _batch(task, [SOLVED, SOLVED, SOLVED]) == [True]
    assert _alone(task, SOLVED)
