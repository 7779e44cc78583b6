"""Which process of the child each part of a test run talks to: one forked per test, and one per
class and per module for what their fixtures ask of the code under test.

Why: the child that imported the package would otherwise run every test, in a fixed order, and
the code under test could remember what one test passed it (an expected value used as input in
a round-trip test) and play it back when a later test asks for it. So every test runs against a
process forked for it (:meth:`Conversation.open_scope`) that no other test's calls reached: the
package as the tests' modules imported it, plus what its own module's and class's fixtures
set up. A class whose ``setUpClass`` (or a module whose ``setUpModule``) calls the code under
test gets a process of its own for those calls, forked from the module's (or the importing)
process, and its tests are forked from it: the fixture's state is there for each of its tests,
as unittest promises, and no test sees another's, nor another class's fixtures. Tests that
rely on an earlier test of their class having run (order-dependent tests) are not supported:
unittest does not promise an order either.

A fork is made lazily, at the first request of its scope: a class without fixtures that call
the child costs nothing, a test that calls nothing costs nothing. The child puts back, after
each fork ends, what it left outside its memory (files of the writable folders, processes,
signals: :mod:`endstate_harness.inside.judge_scope`).
"""

from __future__ import annotations

import random
import unittest
from typing import Any

from endstate_harness.graders.judge.remote import Conversation


def _conv_of(result: Any) -> Conversation | None:
    conv = getattr(result, "judge_conv", None)
    return conv if isinstance(conv, Conversation) else None


class IsolatingSuite(unittest.TestSuite):
    """A suite that opens a scope for each module's and each class's fixtures and closes it
    after their teardown and cleanups (the test's own scope is the result's: ``startTest`` to
    ``stopTest``, which covers ``setUp``, the test, ``tearDown`` and its cleanups)."""

    def _handleClassSetUp(self, test: Any, result: Any) -> None:
        conv = _conv_of(result)
        if conv is not None and test.__class__ != getattr(result, "_previousTestClass", None):
            conv.open_scope()
            result.judge_class_scope = True
        super()._handleClassSetUp(test, result)  # type: ignore[misc]

    def _tearDownPreviousClass(self, test: Any, result: Any) -> None:
        previous = getattr(result, "_previousTestClass", None)
        try:
            super()._tearDownPreviousClass(test, result)  # type: ignore[misc]
        finally:
            conv = _conv_of(result)
            if (conv is not None and previous is not None and test.__class__ != previous
                    and getattr(result, "judge_class_scope", False)):
                result.judge_class_scope = False
                conv.close_scope()

    def _handleModuleFixture(self, test: Any, result: Any) -> None:
        previous = self._get_previous_module(result)  # type: ignore[attr-defined]
        if _conv_of(result) is not None and test.__class__.__module__ != previous:
            result.judge_module_next = True  # opened once the previous module's is closed
        super()._handleModuleFixture(test, result)  # type: ignore[misc]

    def _handleModuleTearDown(self, result: Any) -> None:
        try:
            super()._handleModuleTearDown(result)  # type: ignore[misc]
        finally:
            conv = _conv_of(result)
            if conv is not None:
                if getattr(result, "judge_module_scope", False):
                    result.judge_module_scope = False
                    conv.close_scope()
                if getattr(result, "judge_module_next", False):
                    result.judge_module_next = False
                    result.judge_module_scope = True
                    conv.open_scope()


def isolating(suite: unittest.TestSuite) -> unittest.TestSuite:
    """``suite`` with every plain suite in it (a module's ``load_tests`` may build its own)
    made an :class:`IsolatingSuite`; a suite class of the tests' own is left as it is, and its
    fixtures' requests find the importing process refusing them once the tests have started:
    they fail, never share a process."""
    stack: list[Any] = [suite]
    while stack:
        item = stack.pop()
        if type(item) is unittest.TestSuite:
            item.__class__ = IsolatingSuite
        if isinstance(item, unittest.TestSuite):
            stack.extend(item)
    return suite


def ordered(suite: unittest.TestSuite, order: str) -> unittest.TestSuite:
    """``suite`` with its tests in ``order``: "" as discovered, ``reversed``, or
    ``shuffled:N`` (by a generator seeded with N, so the same N gives the same order).

    Why: a real agent's grading is no promise of the order an author's own runs saw, and a test
    that passes only after another (state its class or module kept in the judge) is a test
    whose verdict is luck; prove grades the solution once more in another order to show it
    (ES909). Each plain suite's members are reordered where they are (modules among modules,
    classes among classes, tests within their class), so a class's tests stay together and its
    fixtures run once; a suite class of the tests' own (a ``load_tests``) keeps its order."""
    if order == "reversed":
        def arrange(items: list[Any]) -> None:
            items.reverse()
    elif order.startswith("shuffled:") and order[9:].isdigit():
        shuffle = random.Random(int(order[9:])).shuffle

        def arrange(items: list[Any]) -> None:
            shuffle(items)
    else:
        return suite
    stack: list[Any] = [suite]
    while stack:
        item = stack.pop()
        if type(item) is unittest.TestSuite:
            arrange(item._tests)  # type: ignore[attr-defined]
        if isinstance(item, unittest.TestSuite):
            stack.extend(item)
    return suite
