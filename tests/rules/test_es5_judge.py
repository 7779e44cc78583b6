"""ES508 — tests that judged_tests cannot run: each shape that draws it, and sound neighbours."""

from __future__ import annotations

import ast
import copy
from pathlib import Path

import pytest

from tests.rules.conftest import GUIDE_GRADERS, TaskBuilder, good, lint
from tests.rules.helpers_es345 import absent, found, where
from tests.support.tasks import FIXTURE

JUDGE = {"name": "endstate_harness.graders:judged_tests", "args": {"start_dir": "tests"}}


def judged(*, visible: bool = True) -> dict[str, object]:
    graders = copy.deepcopy(GUIDE_GRADERS)
    spec = copy.deepcopy(JUDGE)
    if not visible:
        spec["args"]["visible"] = False  # type: ignore[index]
    graders[0] = spec
    return good(graders=graders)


HEAD = (
    "import io\nimport unittest\nfrom unittest import mock\n\n"
    "import chunker\nfrom chunker import chunk\n\n\n"
)


def holdout(body: str) -> dict[str, str | bytes]:
    return {
        "tests/test_holdout_chunk.py": HEAD
        + "class HoldoutTest(unittest.TestCase):\n    def test_it(self):\n"
        + "".join(f"        {line}\n" for line in body.splitlines())
    }


def _line_of(task: Path, needle: str) -> tuple[int, int]:
    text = (task / "holdout" / "tests" / "test_holdout_chunk.py").read_text()
    at = text.index(needle)
    return text.count("\n", 0, at) + 1, at - (text.rfind("\n", 0, at) + 1) + 1


def test_es508_mock_patch_of_the_package(make_task: TaskBuilder) -> None:
    task = make_task(judged(), holdout=holdout(
        'with mock.patch("chunker.core.chunk", return_value=[]):\n    pass'))
    [d] = found(task, "ES508")
    assert d.severity == "error" and "mock.patch" in d.message
    line, col = _line_of(task, 'mock.patch("chunker')
    assert where(d)[:2] == (line, col)
    assert d.file == task / "holdout" / "tests" / "test_holdout_chunk.py"


def test_es508_assignment_to_the_package(make_task: TaskBuilder) -> None:
    task = make_task(judged(), holdout=holdout("chunker.LIMIT = 3"))
    [d] = found(task, "ES508")
    assert "monkeypatching" in d.message


def test_es508_passing_things_of_the_test_process(make_task: TaskBuilder) -> None:
    task = make_task(judged(), holdout=holdout(
        "chunk(io.StringIO('x'), 2)\nchunk([1], key=lambda x: x)"))
    messages = sorted(d.message for d in found(task, "ES508"))
    assert len(messages) == 2
    assert "a lambda" in messages[0] or "a lambda" in messages[1]
    assert any("StringIO" in m for m in messages)


def test_es508_an_instance_of_the_tests_own_class(make_task: TaskBuilder) -> None:
    files = holdout("chunk(Clock(), 2)")
    files["tests/test_holdout_chunk.py"] = files["tests/test_holdout_chunk.py"].replace(
        "class HoldoutTest", "class Clock:\n    now = 0\n\n\nclass HoldoutTest")
    task = make_task(judged(), holdout=files)
    [d] = found(task, "ES508")
    assert "'Clock'" in d.message


def test_es508_near_misses(make_task: TaskBuilder) -> None:
    # Plain values, the package's own objects, and patches of the test's own things are fine;
    # the same patch under tests_pass (in process) is no judge finding either.
    body = (
        "items = list(range(3))\nself.assertEqual(chunk(items, 2), [[0, 1], [2]])\n"
        "with mock.patch.object(self, 'id', return_value='x'):\n    pass\n"
        "chunk(chunk([1], 1), 1)"
    )
    absent(make_task(judged(), holdout=holdout(body)), "ES508")
    patch = holdout('with mock.patch("chunker.core.chunk"):\n    pass')
    absent(make_task(good(id="in-process"), name="in-process", holdout=patch), "ES508")


def test_es508_visible_false_skips_the_fixture_tests(make_task: TaskBuilder) -> None:
    fixture_test = HEAD + (
        "class ChunkTest(unittest.TestCase):\n    def test_x(self):\n"
        "        chunk(lambda: 1, 2)\n"
    )
    fixture = {**FIXTURE, "tests/test_chunk.py": fixture_test}
    assert found(make_task(judged(), fixture=fixture), "ES508")
    absent(make_task(judged(visible=False), name="hidden-only", fixture=fixture), "ES508")


# --- assertions the package's own operators would decide, and dunders that do not cross ----

LEDGER = {
    "chunker/__init__.py": (
        '"""Chunks."""\n\n__all__ = ["chunk"]\n__version__ = "1.0"\n\n'
        "from chunker.core import chunk\nfrom chunker.money import Money, parse\n"
    ),
    "chunker/money.py": (
        "import dataclasses\nimport enum\nfrom collections.abc import Iterator\n\n\n"
        "class Money:\n    '''Cents.'''\n\n    def __init__(self, cents):\n"
        "        self.cents = cents\n\n"
        "    def doubled(self) -> 'Money':\n        return Money(self.cents * 2)\n\n"
        "    def total(self) -> int:\n        return self.cents\n\n\n"
        "def parse(text: str) -> Money:\n    return Money(int(text))\n\n\n"
        "def pieces(values):\n    for value in values:\n        yield value\n\n\n"
        "def stream(values) -> Iterator[int]:\n    return iter(values)\n\n\n"
        "def count(values) -> int:\n    return len(values)\n\n\n"
        "@dataclasses.dataclass\nclass Line:\n    amount: int\n    owner: Money\n\n\n"
        "class Color(enum.Enum):\n    RED = 1\n"
    ),
}
OPERAND_HEAD = (
    "import inspect\nimport unittest\n\nimport chunker\nfrom chunker import chunk\n"
    "from chunker.money import Color, Line, Money, count, parse, pieces, stream\n\n\n"
)


def operand_holdout(body: str) -> dict[str, str | bytes]:
    return {
        "tests/test_holdout_chunk.py": OPERAND_HEAD
        + "class HoldoutTest(unittest.TestCase):\n    def test_it(self):\n"
        + "".join(f"        {line}\n" for line in body.splitlines())
    }


def ledger_task(make_task: TaskBuilder, body: str, name: str) -> Path:
    return make_task(judged(), name=name, fixture={**FIXTURE, **LEDGER},
                     holdout=operand_holdout(body))


UNSAFE = {
    "almost-equal": "self.assertAlmostEqual(parse('5'), 21.0)",
    "equal-bound": "m = parse('5')\nself.assertEqual(m, 5)",
    "class-call": "self.assertEqual(Money(5), 5)",
    "method-self": "self.assertEqual(parse('5').doubled(), 10)",
    "membership": "self.assertIn(1, pieces([1]))",
    "iterator": "self.assertCountEqual(stream([1]), [1])",
    "truth": "self.assertTrue(parse('5'))",
    "ordering-outside": "self.assertTrue(parse('5') < 3)",
    "membership-outside": "self.assertTrue(3 in parse('5'))",
    "not": "self.assertFalse(not parse('5'))",
    "if": "if parse('5'):\n    pass",
    "type-equal": "self.assertEqual(type(parse('5')), Money)",
    "in-a-list": "self.assertEqual([Money(1)], [])",
    "enum": "self.assertEqual(Color.RED, 1)",
    "field": "self.assertEqual(Line(1, Money(2)).owner, 2)",
    "module": "self.assertTrue(chunker)",
}


def test_es508_an_assertion_the_package_s_operators_would_decide(make_task: TaskBuilder) -> None:
    for name, body in UNSAFE.items():
        task = ledger_task(make_task, body, f"unsafe-{name}")
        hits = found(task, "ES508")
        assert len(hits) == 1, (name, [d.message for d in hits])
        message = hits[0].message
        assert "own operators never decide an assertion" in message, (name, message)
        assert "compare plain values instead" in message and "assertIs" in message


def test_es508_points_at_the_operand(make_task: TaskBuilder) -> None:
    task = ledger_task(make_task, "self.assertAlmostEqual(parse('5'), 21.0)", "at-operand")
    [d] = found(task, "ES508")
    text = (task / "holdout" / "tests" / "test_holdout_chunk.py").read_text()
    at = text.index("parse('5')")
    assert where(d)[:2] == (text.count("\n", 0, at) + 1, at - text.rfind("\n", 0, at))
    assert "gives assertAlmostEqual an instance of chunker.money.Money" in d.message


SOUND = (
    "m = parse('5')\n"
    "self.assertEqual(str(m), '$0.05')\n"
    "self.assertEqual(m.cents, 5)\n"
    "self.assertEqual(len(m), 1)\n"
    "self.assertEqual(m.total(), 5)\n"
    "self.assertEqual(count([1]), 1)\n"
    "self.assertEqual(chunk([1], 1), [[1]])\n"
    "self.assertIsInstance(m, Money)\n"
    "self.assertIs(type(m), Money)\n"
    "self.assertIsNotNone(m)\n"
    "self.assertTrue(m is not None)\n"
    "self.assertEqual(list(pieces([1])), [1])\n"
    "self.assertEqual(Line(1, m).amount, 1)\n"
    "self.assertEqual(chunker.__all__, ['chunk'])\n"
    "self.assertEqual(chunker.__version__, '1.0')\n"
    "self.assertEqual(chunker.__name__, 'chunker')\n"
    "self.assertEqual(Money.__doc__, 'Cents.')\n"
    "self.assertEqual(parse.__name__, 'parse')\n"
    "self.assertRaises(ValueError, parse, 'x')\n"
    "self.assertEqual(str(Color.RED), 'Color.RED')\n"
    "for value in pieces([1, 2]):\n    self.assertGreater(value, 0)\n"
    "def check(x):\n    self.assertTrue(x)\n"
    "check(m.total())\n"
)


def test_es508_sound_uses_of_the_package_s_objects(make_task: TaskBuilder) -> None:
    absent(ledger_task(make_task, SOUND, "sound-objects"), "ES508")


def test_es508_a_name_bound_twice_is_not_known(make_task: TaskBuilder) -> None:
    body = "m = parse('5')\nm = m.total()\nself.assertEqual(m, 5)"
    absent(ledger_task(make_task, body, "rebound"), "ES508")


@pytest.mark.parametrize("line", [
    "self.assertEqual(chunker.__file__, 'x')",
    "self.assertTrue(parse.__code__)",
    "self.assertEqual(vars(chunker), {})",
    "inspect.getsource(parse)",
])
def test_es508_dunders_that_do_not_cross(make_task: TaskBuilder, line: str) -> None:
    task = ledger_task(make_task, line, "dunder")
    hits = found(task, "ES508")
    assert any("does not cross the judge's boundary" in d.message for d in hits), hits


def test_es508_is_silent_on_every_shipped_task() -> None:
    suite = Path(__file__).resolve().parents[2] / "tasks"
    tasks = sorted(p.parent for p in suite.glob("*/task.json"))
    assert len(tasks) >= 17
    assert [(d.file, d.message) for d in lint(*tasks) if d.code == "ES508"] == []


def _own_nodes_by_recursion(body: list[ast.stmt]) -> list[ast.AST]:
    """The scope's own nodes as the rule first defined them (a walk per scope), less the
    expression contexts, which lint's shared walks leave out
    (``endstate_author.engine.astwalk``)."""
    out: list[ast.AST] = []
    stack: list[ast.AST] = list(reversed(body))
    while stack:
        node = stack.pop()
        out.append(node)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            continue
        if isinstance(node, ast.ClassDef):
            stack.extend(reversed([s for s in node.body if not isinstance(
                s, ast.FunctionDef | ast.AsyncFunctionDef)]))
            continue
        stack.extend(reversed([c for c in ast.iter_child_nodes(node)
                               if not isinstance(c, ast.Load | ast.Store | ast.Del)]))
    return out


def test_es508_scopes_in_one_pass_are_the_scopes_walked_one_by_one() -> None:
    """The operand scanner's one-pass scopes (for speed) against the definition, on every
    Python file of this repository's own code and tasks."""
    from endstate_author.engine.astwalk import walk_spans
    from endstate_author.rules.judge_operands import _scopes

    root = Path(__file__).resolve().parents[2]
    files = [p for d in ("endstate_author", "harness", "tasks", "tests")
             for p in (root / d).rglob("*.py")]
    assert len(files) > 100
    for path in files:
        try:
            module = ast.parse(path.read_bytes())
        except (SyntaxError, ValueError):
            continue
        own, functions = _scopes(module, walk_spans(module))
        assert own[id(module)] == _own_nodes_by_recursion(module.body), path
        walked = [n for n in ast.walk(module)
                  if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
        assert sorted(map(id, functions)) == sorted(map(id, walked)), path
        for function in functions:
            assert own[id(function)] == _own_nodes_by_recursion(function.body), path  # type: ignore[attr-defined]


def test_the_msg_table_is_the_running_pythons_unittest() -> None:
    """ES508's table of where ``msg`` sits agrees with :mod:`unittest` as it is here (every
    assertion this Python has is listed, at the position its signature gives)."""
    import inspect
    import unittest

    from endstate_author.rules.judge_operands import MSG_POSITIONS

    for name in dir(unittest.TestCase):
        function = getattr(unittest.TestCase, name)
        if not name.startswith(("assert", "fail")) or not inspect.isfunction(function):
            continue
        params = list(inspect.signature(function).parameters)[1:]
        assert MSG_POSITIONS.get(name) == (params.index("msg") if "msg" in params else -1), name


# ----- an assertion on the test's own argument after the call (issue 45 item 4) -------------


@pytest.mark.parametrize("body", [
    "items = [3, 1, 2]\nchunk(items, 2)\nself.assertEqual(items, [3, 1, 2])",
    "out = []\nchunker.core.chunk(out, 1)\nself.assertEqual(len(out), 0)",
    "seen = set()\nchunk([1], 1)\nfor i in range(2):\n    chunk(seen, i)\nassert not seen",
    "table = dict(a=1)\nchunk(items=table, size=1)\nself.assertIn('a', table)",
])
def test_es508_an_assertion_on_an_argument_after_the_call(
    make_task: TaskBuilder, body: str
) -> None:
    task = make_task(judged(), holdout=holdout(body))
    found_ = [d for d in found(task, "ES508") if "after giving it" in d.message]
    assert len(found_) == 1, found_
    assert "copy" in found_[0].message


@pytest.mark.parametrize("body", [
    # the result, not the argument
    "items = [3, 1, 2]\nresult = chunk(items, 2)\nself.assertEqual(result, [[3, 1], [2]])",
    # a copy was given
    "items = [3, 1]\nchunk(list(items), 1)\nself.assertEqual(items, [3, 1])",
    # rebound from the call's result before the assertion
    "items = [3, 1]\nitems = chunk(items, 1)\nself.assertEqual(items, [[3], [1]])",
    # an immutable value
    "items = (3, 1)\nchunk(items, 1)\nself.assertEqual(items, (3, 1))",
    # the test changes it itself after the call
    "items = [3]\nchunk(items, 1)\nitems.append(4)\nself.assertEqual(items, [3, 4])",
    # asserted before the call only
    "items = [3]\nself.assertEqual(items, [3])\nchunk(items, 1)",
    # the argument says what the result should be
    "items = [1, 2, 3]\nout = chunk(items, 3)\nself.assertEqual(out, [list(items)])",
    "items = [1, 2, 3]\nself.assertEqual(chunk(items, 3), [items])",
])
def test_es508_near_misses_of_the_argument_check(make_task: TaskBuilder, body: str) -> None:
    task = make_task(judged(), holdout=holdout(body))
    hits = [d for d in lint(task) if d.code == "ES508" and "after giving it" in d.message]
    assert hits == [], hits
