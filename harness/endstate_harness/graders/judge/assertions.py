"""Assertions in the judge refuse operands that stand for objects of the code under test.

Why: ``assertAlmostEqual(ref, 21.0)`` computes ``ref - 21.0``, ``assertIn(x, ref)`` asks
``ref.__contains__``, ``assertCountEqual(ref, [...])`` iterates it, ``assertTrue(ref)`` asks
its truth: each would let the agent's object answer the judge's question. So every
``TestCase`` assertion but the identity, type and exception families fails, before doing
anything, when one of its operands *is or holds* a proxy (found by what the value is, inside
plain lists, tuples, dicts and sets too, never by the test's text). The proxies themselves
refuse the operators outside assertions (:mod:`endstate_harness.graders.judge.proxies`).

Failure messages are bounded as well (:func:`bound_diffs`): unittest diffs two values with
``pprint`` and ``difflib``, whose cost grows faster than the values; past a size the diff is
left out, so a value made to be slow to diff fails as fast as any other.
"""

from __future__ import annotations

import difflib
import functools
import inspect
import pprint
import sys
from collections.abc import Callable, Iterator
from typing import Any

from endstate_harness.graders.judge.proxies import ALLOWED, PLAIN_VALUES_FIX, PlainValuesOnly

_CONTAINERS = (list, tuple, set, frozenset, dict)

MAX_DIFF_VALUES = 10000
"""Largest value (counted in values, containers included) unittest may pretty-print for a diff."""
MAX_DIFF_CHARS = 1 << 16
"""Most characters unittest may diff (its own limit for two strings)."""
MAX_DIFF_PAIRS = 100000
"""Most pairs of lines unittest may diff (ndiff compares lines pairwise)."""


def find_reference(value: Any, is_reference: Callable[[Any], bool]) -> Any:
    """The first proxy in ``value`` or in the plain containers it is made of, else None."""
    stack = [value]
    seen: set[int] = set()
    while stack:
        item = stack.pop()
        if is_reference(item):
            return item
        kind = type(item)
        if kind not in _CONTAINERS or id(item) in seen:
            continue
        seen.add(id(item))
        if kind is dict:
            stack.extend(item.keys())
            stack.extend(item.values())
        else:
            stack.extend(item)
    return None


def refusal(name: str, found: Any) -> PlainValuesOnly:
    kind = type(found)
    where = f"{kind.__module__}.{kind.__name__}"
    return PlainValuesOnly(
        f"{name} was given an object of the code under test ({where}): its own operators "
        "(equality, approximate equality, ordering, membership, truth, iteration, indexing) "
        f"would decide the assertion, so the judge does not ask it; {PLAIN_VALUES_FIX} "
        "(for identity use assertIs, for a type assertIsInstance)"
    )


def guard_assertions(case: type, is_reference: Callable[[Any], bool]) -> None:
    """Wrap every assertion of ``case`` (``unittest.TestCase``) but :data:`ALLOWED`, and
    bound the diffs of its module (:func:`bound_diffs`)."""
    bound_diffs(sys.modules[case.__module__])
    depth = [0]  # an assertion calling another (assertEqual -> assertListEqual) checks once
    for name in dir(case):
        if not name.startswith(("assert", "fail")) or name in ALLOWED:
            continue
        original = getattr(case, name)
        if not inspect.isfunction(original):
            continue
        setattr(case, name, _guarded(name, original, is_reference, depth))


def _guarded(
    name: str, original: Callable[..., Any], is_reference: Callable[[Any], bool],
    depth: list[int],
) -> Callable[..., Any]:
    try:
        params = list(inspect.signature(original).parameters)[1:]
    except (TypeError, ValueError):
        params = []
    msg_at = params.index("msg") if "msg" in params else -1

    @functools.wraps(original)
    def checked(self: Any, *args: Any, **kwargs: Any) -> Any:
        if depth[0] == 0:
            operands = [a for i, a in enumerate(args) if i != msg_at]
            operands += [v for k, v in kwargs.items() if k != "msg"]
            found = find_reference(operands, is_reference)
            if found is not None:
                raise refusal(name, found)
        depth[0] += 1
        try:
            return original(self, *args, **kwargs)
        finally:
            depth[0] -= 1

    return checked


class _Through:
    """A module seen through: the replaced names, then every other attribute of the module."""

    def __init__(self, module: Any, **replaced: Any) -> None:
        self._module = module
        self.__dict__.update(replaced)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._module, name)


def bound_diffs(case_module: Any) -> None:
    """Make ``unittest.case`` pretty-print and diff within :data:`MAX_DIFF_VALUES`,
    :data:`MAX_DIFF_CHARS` and :data:`MAX_DIFF_PAIRS` (beyond them, the diff is left out)."""
    case_module.pprint = _Through(pprint, pformat=_pformat)
    case_module.difflib = _Through(difflib, ndiff=_ndiff)


def _pformat(value: Any, *args: Any, **kwargs: Any) -> str:
    if _larger_than(value, MAX_DIFF_VALUES):
        return f"<a {type(value).__name__} of more than {MAX_DIFF_VALUES} values>"
    return pprint.pformat(value, *args, **kwargs)


def _larger_than(value: Any, limit: int) -> bool:
    stack, count = [value], 0
    while stack:
        item = stack.pop()
        count += 1
        if count > limit:
            return True
        kind = type(item)
        if kind is dict:
            stack.extend(item.keys())
            stack.extend(item.values())
        elif kind in _CONTAINERS:
            stack.extend(item)
    return False


def _ndiff(a: list[str], b: list[str], *args: Any, **kwargs: Any) -> Iterator[str]:
    chars = sum(map(len, a)) + sum(map(len, b))
    if chars > MAX_DIFF_CHARS or len(a) * len(b) > MAX_DIFF_PAIRS:
        return iter([f"(diff left out: {len(a)} and {len(b)} lines are too large to diff)"])
    return difflib.ndiff(a, b, *args, **kwargs)
