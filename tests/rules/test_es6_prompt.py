"""ES6 — the prompt and the graders agree: draws and the near-misses that must stay silent."""

from __future__ import annotations

from pathlib import Path

from endstate_author.engine.diagnostics import Diagnostic
from tests.rules.conftest import TaskBuilder, lint
from tests.support.tasks import FIXTURE, GUIDE_GRADERS, HOLDOUT, good

HOLDOUT_NEW_NAME = {
    **HOLDOUT,
    "tests/test_holdout_pad.py": (
        "import unittest\n\nfrom chunker.core import chunk_padded\n\n\n"
        "class PadTest(unittest.TestCase):\n"
        "    def test_pad(self):\n"
        "        self.assertEqual(chunk_padded([1], 2, fill=0), [[1, 0]])\n"
    ),
}
SOLUTION_PADDED = {
    "chunker/core.py": (
        "def chunk(items, size):\n"
        "    return [items[i:i + size] for i in range(0, len(items), size)]\n\n\n"
        "def chunk_padded(items, size, fill=None):\n"
        "    out = chunk(items, size)\n"
        "    if out and len(out[-1]) < size:\n"
        "        out[-1] = out[-1] + [fill] * (size - len(out[-1]))\n"
        "    return out\n"
    ),
}


def _hits(task: Path, code: str) -> list[Diagnostic]:
    return [d for d in lint(task) if d.code == code]


def test_es601_holdout_calls_a_name_the_prompt_never_gives(make_task: TaskBuilder) -> None:
    task = make_task(
        prompt="Make chunking keep the final partial chunk.\n",
        holdout=HOLDOUT_NEW_NAME,
        solution=SOLUTION_PADDED,
    )
    hits = _hits(task, "ES601")
    assert [(d.message.split("`")[1], d.line, d.column, d.end_column) for d in hits] == [
        ("chunk_padded", 3, 26, 38),
        ("fill", 8, 47, 51),
    ]
    assert all(d.file == task / "holdout/tests/test_holdout_pad.py" for d in hits)
    assert all(d.severity == "warning" for d in hits)


def test_es601_near_miss_backticks_prose_or_fixture(make_task: TaskBuilder) -> None:
    for prompt in (
        "Add `chunk_padded(items, size, fill=None)` to chunker/core.py.\n",
        "Add a chunk padded helper whose fill argument pads the tail.\n",
    ):
        task = make_task(prompt=prompt, holdout=HOLDOUT_NEW_NAME, solution=SOLUTION_PADDED)
        assert not _hits(task, "ES601"), prompt
    # the fixture already has the name (a stub the agent completes): nothing to guess
    fixture = dict(FIXTURE)
    fixture["chunker/core.py"] += (
        "\n\ndef chunk_padded(items, size, fill=None):\n    raise NotImplementedError\n"
    )
    task = make_task(prompt="Finish the padding helper.\n", fixture=fixture,
                     holdout=HOLDOUT_NEW_NAME, solution=SOLUTION_PADDED)  # fmt: skip
    assert not _hits(task, "ES601")


def test_es602_required_or_created_path_unnamed(make_task: TaskBuilder) -> None:
    graders = [*GUIDE_GRADERS, {"name": "endstate.evals.graders:paths_exist",
                                "args": {"paths": ["chunker/pad.py"]}}]  # fmt: skip
    task = make_task(
        good(graders=graders),
        prompt="Make the failing test pass.\n",
        solution={**SOLUTION_PADDED, "chunker/pad.py": "PAD = 0\n"},
    )
    hits = _hits(task, "ES602")
    assert len(hits) == 1 and "chunker/pad.py" in hits[0].message
    assert hits[0].file == task / "task.json"


def test_es602_near_miss_path_named(make_task: TaskBuilder) -> None:
    graders = [*GUIDE_GRADERS, {"name": "endstate.evals.graders:paths_exist",
                                "args": {"paths": ["chunker/pad.py"]}}]  # fmt: skip
    for prompt in ("Put the padding in `chunker/pad.py`.\n", "Add a module chunker.pad.\n"):
        task = make_task(
            good(graders=graders),
            prompt=prompt,
            solution={**SOLUTION_PADDED, "chunker/pad.py": "PAD = 0\n"},
        )
        assert not _hits(task, "ES602"), prompt


def test_es603_promise_nothing_grades(make_task: TaskBuilder) -> None:
    fixture = {**FIXTURE, "chunker/render.py": "def render(rows):\n    return str(rows)\n"}
    task = make_task(
        prompt="Fix `chunk()` so the tail is kept.\n\nAlso make `render()` escape pipes.\n",
        fixture=fixture,
    )
    hits = _hits(task, "ES603")
    assert len(hits) == 1 and "`render`" in hits[0].message
    assert (hits[0].file.name, hits[0].line, hits[0].column) == ("prompt.md", 3, 11)


def test_es603_near_miss_graded_or_not_asked(make_task: TaskBuilder) -> None:
    fixture = {**FIXTURE, "chunker/render.py": "def render(rows):\n    return str(rows)\n"}
    for prompt in (
        "Fix `chunk()` so the tail is kept.\n",  # graded by the tests
        "Fix `chunk()`. Do not change `render()`.\n",  # a negation, not a promise
        "Fix `chunk()`; `render()` shows the result.\n",  # no change asked of render
        "Fix `chunk()` following the rules in `render()`.\n",  # a reference
    ):
        task = make_task(prompt=prompt, fixture=fixture)
        assert not _hits(task, "ES603"), prompt


def test_es6_silent_on_every_shipped_task() -> None:
    suite = Path(__file__).resolve().parents[2] / "tasks"
    hits = [(d.code, str(d.file), d.message) for d in lint(suite) if d.code.startswith("ES6")]
    assert hits == []


def test_es601_leaves_out_what_python_gives_every_object(make_task: TaskBuilder) -> None:
    """``chunker.__name__`` or ``chunk.__doc__`` is nothing an agent must write; a data
    dunder the fixture lacks (``__version__``) still is."""
    holdout = {
        "tests/test_holdout_meta.py": (
            "import unittest\n\nimport chunker\nfrom chunker import chunk\n\n\n"
            "class MetaTest(unittest.TestCase):\n"
            "    def test_meta(self):\n"
            "        self.assertEqual(chunker.__name__, 'chunker')\n"
            "        self.assertEqual(chunk.__doc__, None)\n"
            "        self.assertEqual(chunker.__version__, '1.0')\n"
        ),
    }
    task = make_task(prompt="Make chunking keep the final partial chunk.\n", holdout=holdout)
    assert [d.message.split("`")[1] for d in _hits(task, "ES601")] == ["__version__"]


def test_es603_a_path_only_permitted_is_not_graded(make_task: TaskBuilder) -> None:
    """Listing the promised file in `changed_paths_within` lets it change; it does not check
    the change. With the holdout's test of it, the promise is graded."""
    fixture = {**FIXTURE, "chunker/render.py": "def render(rows):\n    return str(rows)\n"}
    prompt = "Fix `chunk()` so the tail is kept, and make `chunker/render.py` escape pipes.\n"
    scope = {"name": "endstate.evals.graders:changed_paths_within",
             "args": {"allowed": ["chunker/core.py", "chunker/render.py"]}}  # fmt: skip
    graders = [GUIDE_GRADERS[0], GUIDE_GRADERS[1], GUIDE_GRADERS[2], scope]
    task = make_task(good(graders=graders), prompt=prompt, fixture=fixture)
    hits = _hits(task, "ES603")
    assert len(hits) == 1 and "`chunker/render.py`" in hits[0].message
    holdout = {**HOLDOUT, "tests/test_holdout_render.py": (
        "import unittest\n\nfrom chunker.render import render\n\n\n"
        "class RenderTest(unittest.TestCase):\n"
        "    def test_pipe(self):\n        self.assertEqual(render(['a|b']), 'a\\\\|b')\n"
    )}  # fmt: skip
    graded = make_task(good(id="graded", graders=graders), name="graded", prompt=prompt,
                       fixture=fixture, holdout=holdout)  # fmt: skip
    assert not _hits(graded, "ES603")


def test_es602_a_path_argument_of_the_wrong_type_is_not_its_finding(
        make_task: TaskBuilder) -> None:
    """``paths: 5`` or ``path: {...}`` is a wrong argument type (ES2xx says so); ES602 neither
    reports it nor crashes on it (found by the lint fuzzer: ES000 on ``paths`` a number)."""
    for args in ({"paths": 5}, {"paths": {"a": 1}}, {"paths": None}):
        graders = [*GUIDE_GRADERS, {"name": "endstate.evals.graders:paths_exist", "args": args}]
        task = make_task(good(graders=graders), prompt="Make the failing test pass.\n")
        found = lint(task)
        assert not [d for d in found if d.code in ("ES602", "ES000")], (args, found)


MONEY = {
    "money/__init__.py": "from money.format import fmt\n",
    "money/format.py": (
        "import json\nfrom pathlib import Path\n\n"
        "RATES = json.loads((Path(__file__).parent / 'data' / 'rates.json').read_text())\n\n\n"
        "def fmt(cents, currency='EUR'):\n"
        "    return f\"{cents * RATES[currency] / 100:.2f}\"\n"
    ),
    "money/data/rates.json": '{"EUR": 1, "USD": 1}\n',
    "money/cli.py": "import sys\n\nfrom money import fmt\n\nprint(fmt(int(sys.argv[1])))\n",
    "tests/__init__.py": "",
    "tests/test_fmt.py": (
        "import unittest\n\nfrom money import fmt\n\n\n"
        "class FmtTest(unittest.TestCase):\n"
        "    def test_eur(self):\n        self.assertEqual(fmt(150), '1.50')\n"
    ),
}
MONEY_HOLDOUT = {"tests/test_holdout_fmt.py": (
    "import unittest\n\nfrom money import fmt\n\n\n"
    "class HoldoutFmt(unittest.TestCase):\n"
    "    def test_usd(self):\n        self.assertEqual(fmt(100, 'USD'), '1.10')\n"
)}  # fmt: skip


def test_es603_a_file_the_tests_reach_through_the_package_or_read_is_graded(
    make_task: TaskBuilder,
) -> None:
    """Issue 45 item 7: `from money import fmt` reaches money/format.py through the
    package's `__init__`, and format.py reads data/rates.json: both are graded."""
    for prompt in (
        "Fix the rounding in `money/format.py`.\n",
        "Update `money/data/rates.json`: one USD is 1.10 EUR.\n",
    ):
        task = make_task(prompt=prompt, fixture=MONEY, holdout=MONEY_HOLDOUT, solution={
            "money/data/rates.json": '{"EUR": 1, "USD": 1.1}\n'})
        assert not _hits(task, "ES603"), prompt


def test_es603_a_file_no_test_reaches_still_draws_it(make_task: TaskBuilder) -> None:
    task = make_task(prompt="Make `money/cli.py` print the currency too.\n", fixture=MONEY,
                     holdout=MONEY_HOLDOUT, solution={"money/cli.py": MONEY["money/cli.py"]
                                                      + "print('EUR')\n"})
    hits = _hits(task, "ES603")
    assert len(hits) == 1 and "`money/cli.py`" in hits[0].message
