"""The newer mutation operators (issue 44 item 5), the equivalent mutants never generated
(item 4), and the fixed order a line's mutants are sampled in.

Each operator is shown making the expected mutant on a small module; each equivalence rule
removing its mutant while a useful neighbour stays. All on the generator alone (no sandbox):
the checks through the real CLI are in ``test_mutants.py``.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from endstate_author.prove import mutation_edits
from endstate_author.prove.mutation import (
    LEADERS,
    Mutant,
    generate,
    leader_count,
    leaders_and_followers,
    line_order,
    operator_mutants,
)


def _mutants(text: str, contract: str = "") -> list[Mutant]:
    return operator_mutants("m.py", text, set(range(1, text.count("\n") + 2)), {}, contract)


def _found(text: str, kind: str | None = None, contract: str = "") -> set[tuple[int, str]]:
    """(line, description) of the module's mutants (of one kind)."""
    return {(m.line, m.description) for m in _mutants(text, contract)
            if kind is None or m.kind == kind}


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


# --- the operators -----------------------------------------------------------------------

CALLS = '''\
def _cell(v):
    return str(v)


def _pad(text, w, a):
    return text.ljust(w) if a else text


def note(x):
    print(x)


def render(h, w, a, out):
    line = _pad(_cell(h), w, a)
    out.append(line)
    noted = out.append(line)
    quiet = note(line)
    size = len(line).bit_length()
    return _cell(line)
'''


def test_a_calls_value_replaced_by_none() -> None:
    found = _found(CALLS, "call-none")
    assert (14, "`_pad(_cell(h), w, a)` → `None`") in found
    assert (14, "`_cell(h)` → `None`") in found
    mutant = next(m for m in _mutants(CALLS) if m.description == "`_pad(_cell(h), w, a)` → `None`")
    assert mutant.content is not None and b"    line = None\n" in mutant.content
    lines = {line for line, _ in found}
    assert 15 not in lines  # a statement's value is unused
    assert 16 not in lines  # list.append returns None already
    assert 17 not in lines  # so does a function of the module that never returns a value
    assert (18, "`len(line)` → `None`") not in found  # None.bit_length(): only a crash
    assert 19 not in lines  # `return _cell(line)` → `return None` is return-none's
    assert (19, "`return _cell(line)` → `return None`") in _found(CALLS, "return-none")


def test_each_binary_operator_replaced_by_every_other() -> None:
    text = "def f(w, step, name, x):\n    w = w - 1\n    step -= 2\n    return name + 'x', x | 0\n"
    minus = {d for line, d in _found(text) if line == 2 and "`-` →" in d}
    assert minus == {f"`-` → `{o}`" for o in
                     ("+", "*", "/", "//", "%", "**", "&", "|", "^", "<<", ">>")}
    assert (2, "`-` → `^`") in _found(text, "arithmetic-other")  # w - 1 vs w ^ 1
    assert (2, "`-` → `+`") in _found(text, "arithmetic")  # the classic one, as before
    assert (3, "`-=` → `^=`") in _found(text, "arithmetic-other")
    line4 = {d for line, d in _found(text, "arithmetic-other") if line == 4}
    assert not any(d.startswith("`+`") for d in line4)  # a concatenation: only type errors
    assert (4, "`|` → `&`") in _found(text, "arithmetic")  # x & 0 is 0: the classic one
    assert "`|` → `+`" in line4  # x + 0 is x too, but not a type error on a float
    assert "`|` → `^`" not in line4 and "`|` → `<<`" not in line4  # both give x back


def test_a_bound_in_a_comparison_moves_both_ways() -> None:
    text = "def f(amount, n, k):\n    return amount < 0, n >= 1, k > 5\n"
    constants = _found(text, "constant") | _found(text, "comparison-shift")
    assert {(2, "`0` → `1`"), (2, "`0` → `-1` (the bound moved)")} <= constants
    assert {(2, "`1` → `0`"), (2, "`1` → `2` (the bound moved)")} <= constants
    assert {(2, "`5` → `6`"), (2, "`5` → `4`")} <= constants  # already both ways
    assert len(_found(text, "comparison-shift")) == 2
    shifted = next(m for m in _mutants(text) if m.description.startswith("`0` → `-1`"))
    assert shifted.content is not None and b"amount < (-1)" in shifted.content


def test_equality_relaxed_to_an_order() -> None:
    text = ("def f(a, b, how, x):\n    return a == b, a != b, how == 'right', x == None, "
            "x != True\n")
    assert _found(text, "comparison-relax") == {
        (2, "`==` → `<=`"), (2, "`==` → `>=`"), (2, "`!=` → `<`"), (2, "`!=` → `>`"),
    }  # none against a word, None or a bool


NEW_SHAPES = '''\
import functools

LIMIT = 3


def helper(x, base=10):
    return x


@functools.lru_cache(maxsize=None)
def calls(a, b, w):
    total = helper(a) + helper(b, base=10)
    total ^= w - 1
    if a == b and w != 0 and a < 1:
        return [helper(x) for x in range(total)]
    return {"k": helper(a)}.get("k") * LIMIT


class Box:
    def grow(self, by=1):
        self.size = self.size << by
        return self.size % 2
'''


def test_new_operators_parse_alone_as_the_whole_module_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The statement-parse shortcut (``mutated_statement``) holds for the new operators."""
    lines = set(range(1, NEW_SHAPES.count("\n") + 2))
    alone = operator_mutants("edges.py", NEW_SHAPES, lines)
    monkeypatch.setattr(mutation_edits, "WHOLE_MODULE", True)
    whole = operator_mutants("edges.py", NEW_SHAPES, lines)
    kinds = {m.kind for m in whole}
    assert {"call-none", "arithmetic-other", "comparison-relax", "comparison-shift"} <= kinds
    assert alone == whole


# --- equivalent mutants never generated --------------------------------------------------

DEFAULTS = '''\
from decimal import Decimal


def retry(fn, attempts=3, delay=0.5):
    return fn


class Box:
    def __init__(self, size=0):
        self.size = size

    def grow(self, by=1):
        return self.grow_to(self.size + by)

    def grow_to(self, size, exact=False):
        return size

    def twice(self):
        return self.grow(1), self.grow(2)


def use(f, x):
    a = retry(f, attempts=3)
    b = retry(f, attempts=4)
    c = retry(f, 3)
    d = retry(f, 3.0)
    e = Box(0), Box(1)
    g = Decimal("0"), Decimal("0.0"), int(0), int(x), str(""), list([]), float(0.0)
    return a, b, c, d, e, g
'''


def test_an_argument_dropped_that_is_its_default_is_no_mutant() -> None:
    drops = _found(DEFAULTS, "drop-argument") | _found(DEFAULTS, "remove-keyword")
    assert (23, "keyword argument `attempts=` removed") not in drops  # attempts=3 is the default
    assert (24, "keyword argument `attempts=` removed") in drops  # 4 is not
    assert (25, "argument `3` dropped") not in drops  # positionally, the same
    assert (26, "argument `3.0` dropped") in drops  # 3.0 is not 3: another type
    assert (27, "argument `0` dropped") not in drops and (27, "argument `1` dropped") in drops
    assert (19, "argument `1` dropped") not in drops  # self.grow(1): the method's default
    assert (19, "argument `2` dropped") in drops
    line28 = {d for line, d in drops if line == 28}
    assert line28 == {'argument `"0.0"` dropped', "argument `x` dropped"}  # Decimal('0') ==
    # Decimal(), int(0) == int(), str("") == str(), list([]) == list(), float(0.0) == float()


def test_a_default_of_another_module_of_the_package_is_read(tmp_path: Path) -> None:
    fixture, solution = tmp_path / "fixture", tmp_path / "solution"
    util = "def retry(fn, attempts=3):\n    return fn\n"
    _write(fixture, {"pkg/__init__.py": "", "pkg/util.py": util,
                     "pkg/use.py": "from .util import retry\n"})
    _write(solution, {"pkg/use.py": "from .util import retry\n\n\ndef go(f):\n"
                                    "    return retry(f, attempts=3), retry(f, attempts=5)\n"})
    found = [m for m in generate(fixture, solution).mutants if m.kind == "remove-keyword"]
    assert len(found) == 1  # the attempts=5 one, not the attempts=3 one
    assert found[0].content is not None and b"retry(f, attempts=3), retry(f)" in found[0].content
    shadow = "def int(x=1):\n    return x\n\n\ndef go():\n    return int(0)\n"
    assert (6, "argument `0` dropped") in _found(shadow, "drop-argument")  # not the builtin


RAISES = '''\
import re

PATTERN = re.compile(r"(?P<n>[0-9]+)(?P<unit>[a-z]+)")


def parse(s):
    m = PATTERN.match(s)
    if m is None:
        raise ValueError(f"cannot read {s!r}: {len(s)} characters")
    if m.group("unit") not in ("m", "km"):
        raise ValueError(f"unknown unit {m.group('unit')} in {s}")
    unit = m.group("unit")
    return int(m.group("n")), unit
'''


def test_the_message_of_a_raised_exception_is_mutated_only_if_the_contract_says_it() -> None:
    inside = {(9, "`len(s)` → `None`"), (11, "argument `'unit'` dropped")}
    assert not inside & (_found(RAISES, "call-none") | _found(RAISES, "drop-argument"))
    assert (12, 'argument `"unit"` dropped') in _found(RAISES, "drop-argument")  # outside
    assert 11 in {line for line, _ in _found(RAISES, "remove-statement")}  # the raise goes
    # a test that asserts the message's words makes the message contract
    said = _found(RAISES, contract="assertRaisesRegex(ValueError, 'unknown unit')")
    assert (11, "argument `'unit'` dropped") in said
    assert (9, "`len(s)` → `None`") not in said  # that message is still nobody's contract


def test_a_raise_from_the_prompt_is_mutated(tmp_path: Path) -> None:
    root = tmp_path / "task"
    _write(root / "fixture", {"units.py": "def parse(s):\n    return s\n"})
    _write(root / "solution", {"units.py": RAISES})
    (root / "prompt.md").write_text("Refuse a string with `unknown unit <unit> in <text>`.\n")
    found = {(m.line, m.description) for m in generate(root / "fixture", root / "solution").mutants}
    assert (11, "argument `'unit'` dropped") in found
    (root / "prompt.md").write_text("Parse lengths.\n")
    found = {(m.line, m.description) for m in generate(root / "fixture", root / "solution").mutants}
    assert (11, "argument `'unit'` dropped") not in found


def test_a_self_assertion_is_never_deleted() -> None:
    text = ('def f(x):\n    if x > 0:\n        return 1\n    if x < 0:\n        return -1\n'
            '    raise AssertionError("unreachable")\n\n\ndef g(x):\n    assert x >= 0\n'
            '    if x == 0:\n        assert False\n    if x == 1:\n        raise AssertionError\n'
            '    raise ValueError("negative")\n')
    removed = {line for line, _ in _found(text, "remove-statement")}
    assert 6 not in removed and 12 not in removed and 14 not in removed
    assert {10, 15} <= removed  # a real assertion and a real raise: their removal is a mistake


def test_a_swap_with_an_empty_literal_is_no_mutant() -> None:
    text = ("def f(base, config, s):\n"
            "    return merge({}, config), merge(base, config), s.replace('x', '')\n")
    swaps = _found(text, "swap-args")
    assert swaps == {(2, "arguments `base` and `config` swapped")}


# --- the order a line's mutants are sampled in --------------------------------------------

def test_a_lines_mutants_take_turns_by_kind_in_a_fixed_order(tmp_path: Path) -> None:
    text = "def f(w, h, a):\n    return _pad(w - 1, h * 2, a + 3)\n"
    mutants = _mutants(text)
    line = [m for m in mutants if m.line == 2]
    assert len(line) > LEADERS
    ordered = line_order(line)
    assert line_order(list(reversed(line))) == ordered  # the order given does not matter
    first = [m.kind for m in ordered[:LEADERS]]
    assert len(set(first)) == LEADERS  # one of each kind before a second of any
    assert first[:2] == ["arithmetic", "arithmetic-other"]
    count = leader_count(len(line))
    assert count == max(LEADERS, math.ceil(math.sqrt(len(line)))) > LEADERS  # grows with it
    leaders, follows = leaders_and_followers(mutants)
    assert [m.id for m in leaders if m.line == 2] == [m.id for m in line
                                                      if m in ordered[:count]]
    assert set(follows) == {m.id for m in ordered[count:]}
    assert all(follows[m.id] == tuple(ordered[:count]) for m in ordered[count:])
    assert leader_count(3) == leader_count(16) == LEADERS and leader_count(52) == 8
    assert _mutants(text) == mutants  # the same mutants, the same ids, every time
