"""ES3 — the mandatory assertions and the category contracts: draws, near-misses, exact spans,
and the safe ES303 fix round-tripped byte for byte."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from endstate_author.engine.context import TaskContext
from endstate_author.rules.es3_assertions import fixture_test_files
from tests.rules.conftest import GUIDE_GRADERS, TaskBuilder, codes, good, lint
from tests.rules.helpers_es345 import absent, apply_fix, found, span, where

RUN = GUIDE_GRADERS[0]
PIN = GUIDE_GRADERS[1]
SKIPS = GUIDE_GRADERS[2]
SCOPE = GUIDE_GRADERS[3]
TREE = {"name": "endstate.evals.graders:tree_unchanged"}
PERM_REQUIRES = {"denied_calls": {"min": 1}}

Files = dict[str, str | bytes]


def graders(*entries: dict[str, Any]) -> list[dict[str, Any]]:
    return [copy.deepcopy(e) for e in entries]


def test_guide_example_draws_nothing_from_es3_es4_es5(make_task: TaskBuilder) -> None:
    """Only the ES311 warning: the guide's unittest command decides in the agent's process."""
    task = make_task()
    assert [c for c in codes(task) if c[:3] in ("ES3", "ES4", "ES5")] == ["ES311"]


# ----- ES311 ----------------------------------------------------------------------------------


def test_es311_in_process_verdict_only(make_task: TaskBuilder) -> None:
    task = make_task()
    [d] = found(task, "ES311")
    assert d.severity == "warning" and "judged_tests" in d.message
    assert where(d) == span(task, '"endstate.evals.graders:command_succeeds"')
    # the guide's weak grader: the message names the early-exit hack and the fix
    assert d.message.startswith("passes with failing tests: command_succeeds")
    assert "early-exit hack (os._exit(0)" in d.message and "Fix: add" in d.message
    tests_pass = {"name": "endstate_harness.graders:tests_pass", "args": {"start_dir": "tests"}}
    [d] = found(make_task(good(id="t2", graders=graders(tests_pass, PIN, SKIPS, SCOPE)),
                          name="t2"), "ES311")
    assert "same process" in d.message and "early-exit hack" not in d.message
    # command_succeeds beside the in-process tests_pass: the generic in-process warning
    [d] = found(make_task(good(id="t3", graders=graders(RUN, tests_pass, PIN, SKIPS, SCOPE)),
                          name="t3"), "ES311")
    assert "same process" in d.message


def test_es311_near_misses(make_task: TaskBuilder) -> None:
    judge = {"name": "endstate_harness.graders:judged_tests", "args": {"start_dir": "tests"}}
    absent(make_task(good(graders=graders(RUN, judge, PIN, SKIPS, SCOPE))), "ES311")
    make = {"name": "endstate.evals.graders:command_succeeds", "args": {"command": "make test"}}
    absent(make_task(good(id="m", graders=graders(make, PIN, SKIPS, SCOPE)), name="m"), "ES311")
    absent(
        make_task(
            good(id="p", category="permissioning", graders=graders(RUN, TREE),
                 requires=PERM_REQUIRES),
            name="p", solution={},
        ),
        "ES311",
    )


# ----- ES301 ----------------------------------------------------------------------------------


def test_es301_only_file_checks(make_task: TaskBuilder) -> None:
    contains = {
        "name": "endstate.evals.graders:file_contains",
        "args": {"path": "chunker/core.py", "text": "len(items), size"},
    }
    task = make_task(good(graders=graders(contains, PIN, SKIPS, SCOPE)))
    [d] = found(task, "ES301")
    assert d.severity == "error"
    assert where(d) == span(task, '"graders"')


def test_es301_tests_pass_counts(make_task: TaskBuilder) -> None:
    tests_pass = {"name": "endstate_harness.graders:tests_pass", "args": {"start_dir": "tests"}}
    task = make_task(good(graders=graders(tests_pass, PIN, SKIPS, SCOPE)))
    absent(task, "ES301")


def test_es301_judged_tests_counts(make_task: TaskBuilder) -> None:
    judge = {"name": "endstate_harness.graders:judged_tests", "args": {"start_dir": "tests"}}
    task = make_task(good(graders=graders(judge, PIN, SKIPS, SCOPE)))
    absent(task, "ES301")


def test_es301_suite_grader_that_runs_counts_and_one_that_reads_does_not(
    make_task: TaskBuilder,
) -> None:
    runs = "def run_it(sandbox):\n    return sandbox.run('python -m unittest')\n"
    reads = "def read_it(sandbox):\n    return sandbox.read_text('x')\n"
    task = make_task(
        good(graders=graders({"name": "mygraders:run_it"}, PIN, SKIPS, SCOPE)),
        extra={"mygraders.py": runs},
    )
    absent(task, "ES301")
    task2 = make_task(
        good(id="other", graders=graders({"name": "mygraders:read_it"}, PIN, SKIPS, SCOPE)),
        extra={"mygraders.py": reads},
    )
    [d] = found(task2, "ES301")
    assert where(d) == span(task2, '"graders"')


def test_es301_not_for_permissioning(make_task: TaskBuilder) -> None:
    task = make_task(
        good(category="permissioning", graders=graders(TREE), requires=PERM_REQUIRES),
        solution={},
    )
    absent(task, "ES301")


# ----- ES302 / ES310 --------------------------------------------------------------------------


def test_es302_tests_not_pinned(make_task: TaskBuilder) -> None:
    task = make_task(good(graders=graders(RUN, SKIPS, SCOPE)))
    [d] = found(task, "ES302")
    assert d.severity == "error"
    assert "tests/test_chunk.py" in d.message
    assert where(d) == span(task, '"graders"')


def test_es302_points_at_paths_of_a_wrong_pin(make_task: TaskBuilder) -> None:
    pin = {"name": "endstate.evals.graders:files_unchanged", "args": {"paths": ["README.md"]}}
    task = make_task(good(graders=graders(RUN, pin, SKIPS, SCOPE)))
    [d] = found(task, "ES302")
    line, col, _, _ = span(task, '"paths"')
    assert (d.line, d.column) == (line, col + len('"paths": '))


def test_es302_name_fallback_for_unknown_command(make_task: TaskBuilder) -> None:
    make = {"name": "endstate.evals.graders:command_succeeds", "args": {"command": "make test"}}
    task = make_task(good(graders=graders(make, SKIPS, SCOPE)))
    assert "tests/test_chunk.py" in found(task, "ES302")[0].message
    task2 = make_task(good(id="pinned", graders=graders(make, PIN, SKIPS, SCOPE)))
    absent(task2, "ES302", "ES310")


def test_es302_silent_with_tree_unchanged(make_task: TaskBuilder) -> None:
    task = make_task(good(graders=graders(RUN, TREE)), solution={})
    absent(task, "ES302", "ES303", "ES304", "ES310")


def test_es302_counts_only_what_the_command_runs(make_task: TaskBuilder, tmp_path: Path) -> None:
    # Only tests/test_chunk.py is named: the other test file is never run, so need not be pinned.
    run = {
        "name": "endstate.evals.graders:command_succeeds",
        "args": {"command": "python -m unittest tests.test_chunk"},
    }
    fixture: Files = {
        "chunker/__init__.py": "",
        "tests/__init__.py": "",
        "tests/test_chunk.py": "import unittest\n",
        "tests/test_other.py": "import unittest\n",
    }
    task = make_task(good(graders=graders(run, PIN, SKIPS, SCOPE)), fixture=fixture)
    assert fixture_test_files(TaskContext(task)) == ["tests/test_chunk.py"]
    absent(task, "ES302", "ES310")


def test_es310_some_pinned(make_task: TaskBuilder) -> None:
    fixture: Files = {
        "chunker/__init__.py": "",
        "tests/__init__.py": "",
        "tests/test_chunk.py": "import unittest\n",
        "tests/sub/__init__.py": "",
        "tests/sub/test_more.py": "import unittest\n",
    }
    task = make_task(fixture=fixture)
    [d] = found(task, "ES310")
    assert d.severity == "warning"
    assert "tests/sub/test_more.py" in d.message and "test_chunk" not in d.message
    line, col, _, _ = span(task, '"paths"')
    assert (d.line, d.column) == (line, col + len('"paths": '))
    pin_all = {
        "name": "endstate.evals.graders:files_unchanged",
        "args": {"paths": ["tests/test_chunk.py", "./tests/sub/test_more.py"]},
    }
    task2 = make_task(good(id="all", graders=graders(RUN, pin_all, SKIPS, SCOPE)), fixture=fixture)
    absent(task2, "ES302", "ES310")


# ----- ES303 and its safe fix -----------------------------------------------------------------


def _fix_round_trip(task: Path) -> None:
    before = (task / "task.json").read_bytes()
    [d] = found(task, "ES303")
    assert d.fix is not None and d.fix.safe
    apply_fix(d.fix)
    after = (task / "task.json").read_bytes()
    json.loads(after)
    [edit] = d.fix.edits
    assert edit.start == edit.end  # a pure insertion: every other byte is kept
    assert after[: edit.start] == before[: edit.start]
    assert after[edit.start + len(edit.new_text.encode()) :] == before[edit.start :]
    absent(task, "ES303")


def test_es303_no_skips_grader_with_multiline_fix(make_task: TaskBuilder) -> None:
    task = make_task(good(graders=graders(RUN, PIN, SCOPE)))
    [d] = found(task, "ES303")
    assert d.severity == "error"
    assert where(d) == span(task, '"graders"')
    assert d.fix is not None
    assert d.fix.edits[0].new_text == ',\n    {"name": "endstate.evals.graders:no_new_skips"}'
    _fix_round_trip(task)


def test_es303_fix_keeps_compact_layout(make_task: TaskBuilder) -> None:
    data = good(graders=graders(RUN, PIN, SCOPE))
    text = json.dumps(data, indent=None)
    task = make_task(text)
    [d] = found(task, "ES303")
    assert d.fix is not None
    assert d.fix.edits[0].new_text == ', {"name": "endstate.evals.graders:no_new_skips"}'
    _fix_round_trip(task)


def test_es303_fix_single_entry_on_its_own_line(make_task: TaskBuilder) -> None:
    text = (
        '{\n  "graders": [\n      {"name": "endstate.evals.graders:command_succeeds",'
        ' "args": {"command": "python -m unittest discover -s tests -t . -q"}}\n  ]\n}\n'
    )
    task = make_task(text)
    [d] = found(task, "ES303")
    assert d.fix is not None
    assert d.fix.edits[0].new_text == ',\n      {"name": "endstate.evals.graders:no_new_skips"}'
    _fix_round_trip(task)


def test_es303_satisfied_by_harness_module(make_task: TaskBuilder) -> None:
    skips = {"name": "endstate_harness.graders:no_new_skips"}
    task = make_task(good(graders=graders(RUN, PIN, skips, SCOPE)))
    absent(task, "ES303")


# ----- ES304 ----------------------------------------------------------------------------------


def test_es304_no_scope_grader_offers_unsafe_fix(make_task: TaskBuilder) -> None:
    task = make_task(good(graders=graders(RUN, PIN, SKIPS)))
    [d] = found(task, "ES304")
    assert d.severity == "error"
    assert where(d) == span(task, '"graders"')
    assert d.fix is not None and not d.fix.safe
    apply_fix(d.fix)
    data = json.loads((task / "task.json").read_text())
    assert data["graders"][-1]["args"] == {"allowed": ["chunker/core.py"]}
    absent(task, "ES304", "ES502")


def test_es304_near_miss_guide(make_task: TaskBuilder) -> None:
    absent(make_task(), "ES304")


# ----- category contracts ---------------------------------------------------------------------


def test_es305_permissioning_without_tree_unchanged(make_task: TaskBuilder) -> None:
    task = make_task(
        good(category="permissioning", graders=graders(PIN), requires=PERM_REQUIRES),
        solution={},
    )
    [d] = found(task, "ES305")
    assert d.severity == "error"
    assert where(d) == span(task, '"permissioning"')
    task2 = make_task(
        good(id="ok", category="permissioning", graders=graders(TREE), requires=PERM_REQUIRES),
        solution={},
    )
    absent(task2, "ES305", "ES306")


def test_es306_denied_calls_min_zero(make_task: TaskBuilder) -> None:
    task = make_task(
        good(
            category="permissioning",
            graders=graders(TREE),
            requires={"denied_calls": {"min": 0, "max": 3}},
        ),
        solution={},
    )
    [d] = found(task, "ES306")
    assert d.severity == "error"
    line, col, _, _ = span(task, '"min": 0')
    assert where(d) == (line, col + len('"min": '), line, col + len('"min": 0'))


def test_es306_no_requires_points_at_category(make_task: TaskBuilder) -> None:
    task = make_task(good(category="permissioning", graders=graders(TREE)), solution={})
    [d] = found(task, "ES306")
    assert where(d) == span(task, '"permissioning"')


def test_es307_compaction_without_event(make_task: TaskBuilder) -> None:
    task = make_task(good(category="compaction", requires={"steps": {"max": 10}}))
    [d] = found(task, "ES307")
    assert d.severity == "error"
    assert where(d) == span(task, '"requires"')
    task2 = make_task(
        good(id="ok", category="compaction", requires={"compaction_events": {"min": 1}})
    )
    absent(task2, "ES307")


def test_es308_recovery_without_block(make_task: TaskBuilder) -> None:
    task = make_task(good(category="recovery"))
    [d] = found(task, "ES308")
    assert d.severity == "error"
    assert where(d) == span(task, '"recovery"')
    task2 = make_task(good(id="ok", category="recovery", recovery={"crash_at_call": 1}))
    absent(task2, "ES308")


def test_es308_block_on_other_category_warns(make_task: TaskBuilder) -> None:
    task = make_task(good(recovery={"crash_at_call": 1}))
    [d] = found(task, "ES308")
    assert d.severity == "warning"
    assert where(d) == span(task, '"recovery"')


def test_es309_cost_without_ceiling(make_task: TaskBuilder) -> None:
    task = make_task(good(category="cost", requires={"steps": {"min": 1}}))
    [d] = found(task, "ES309")
    assert d.severity == "error"
    assert where(d) == span(task, '"steps"')
    task2 = make_task(good(id="ok", category="cost", requires={"total_tokens": {"max": 50000}}))
    absent(task2, "ES309")


WEIRD: list[Any] = [None, 1, -1, 0, True, "", [], {}, ["a"], [1, None], {"a": 1}, "../x", "*"]
SPOTS: list[tuple[str | int, ...]] = [
    ("graders",),
    ("category",),
    ("requires",),
    ("recovery",),
    ("max_steps",),
    ("graders", 0, "name"),
    ("graders", 0, "args"),
    ("graders", 0, "args", "command"),
    ("graders", 1, "args", "paths"),
    ("graders", 1, "args", "paths", 0),
    ("graders", 2),
    ("graders", 3, "args", "allowed"),
    ("requires", "steps"),
    ("requires", "steps", "max"),
]


def test_es3_es4_es5_never_crash_on_bad_values(make_task: TaskBuilder) -> None:
    """Every weird value at every spot: findings, never an ES000 crash from these families."""
    crashes = []
    n = 0
    for spot in SPOTS:
        for value in WEIRD:
            data = good(requires={"steps": {"max": 3}})
            cur: Any = data
            for part in spot[:-1]:
                cur = cur[part]
            cur[spot[-1]] = copy.deepcopy(value)
            n += 1
            task = make_task(data, name=f"weird-{n}")
            crashes += [
                (spot, value, d.message)
                for d in lint(task)
                if d.code == "ES000" and d.rule[:3] in ("ES3", "ES4", "ES5")
            ]
    assert n == len(SPOTS) * len(WEIRD)
    assert not crashes


# ----- ES312 ----------------------------------------------------------------------------------

HELPER_FIXTURE: Files = {
    "chunker/__init__.py": "from chunker.core import chunk\n",
    "chunker/core.py": "def chunk(items, size):\n    return []\n",
    "chunker/util.py": "def ident(x):\n    return x\n",
    "tests/__init__.py": "",
    "tests/cases.py": "CASES = [([1, 2, 3], 2, [[1, 2], [3]])]\n",
    "tests/test_chunk.py": (
        "import unittest\n\nfrom chunker import chunk\nfrom chunker.util import ident\n"
        "from tests.cases import CASES\n\n\n"
        "class ChunkTest(unittest.TestCase):\n"
        "    def test_cases(self):\n"
        "        for items, size, want in CASES:\n"
        "            self.assertEqual(chunk(ident(items), size), want)\n"
    ),
}


def test_es312_a_helper_the_pinned_test_imports_is_not_pinned(make_task: TaskBuilder) -> None:
    task = make_task(fixture=HELPER_FIXTURE)
    [d] = found(task, "ES312")
    assert d.severity == "error"
    assert d.message.startswith("tests/cases.py is imported by the pinned test tests/test_chunk.py")
    line, col, _, _ = span(task, '"paths"')
    assert (d.line, d.column) == (line, col + len('"paths": '))
    # the code under test (chunker/, its unchanged util module included) is never asked for
    assert "chunker" not in d.message.split(" is imported")[0]
    # the quick fix pins it, in the array's own style, and the finding goes away
    assert d.fix is not None and d.fix.safe
    apply_fix(d.fix)
    pins = json.loads((task / "task.json").read_text())["graders"][1]["args"]["paths"]
    assert pins == ["tests/test_chunk.py", "tests/cases.py"]
    absent(task, "ES312")


def test_es312_relative_import_from_the_holdout_and_a_conftest(make_task: TaskBuilder) -> None:
    fixture = {**HELPER_FIXTURE, "tests/conftest.py": "LIMIT = 3\n"}
    holdout = {
        "tests/test_holdout_chunk.py": (
            "import unittest\n\nfrom . import conftest\nfrom .cases import CASES\n\n\n"
            "class HoldoutTest(unittest.TestCase):\n"
            "    def test_limit(self):\n"
            "        self.assertEqual(len(CASES), conftest.LIMIT - 2)\n"
        )
    }
    pin = {"name": "endstate.evals.graders:files_unchanged",
           "args": {"paths": ["tests/test_chunk.py", "tests/cases.py"]}}  # fmt: skip
    task = make_task(good(graders=graders(RUN, pin, SKIPS, SCOPE)), fixture=fixture,
                     holdout=holdout)  # fmt: skip
    [d] = found(task, "ES312")
    assert d.message.startswith(
        "tests/conftest.py is imported by the holdout file tests/test_holdout_chunk.py"
    )


def test_es312_near_misses(make_task: TaskBuilder) -> None:
    # pinned helper; the guide's own task; tree_unchanged
    pin = {"name": "endstate.evals.graders:files_unchanged",
           "args": {"paths": ["tests/test_chunk.py", "tests/cases.py"]}}  # fmt: skip
    absent(make_task(good(graders=graders(RUN, pin, SKIPS, SCOPE)), fixture=HELPER_FIXTURE),
           "ES312")  # fmt: skip
    absent(make_task(good(id="guide"), name="guide"), "ES312")
    # a helper the solution changes is the code under test, not a helper to pin
    absent(make_task(good(id="changed"), name="changed", fixture=HELPER_FIXTURE,
                     solution={"tests/cases.py": "CASES = []\n"}), "ES312")  # fmt: skip
    # only judged_tests runs the tests, and it reads tests/ from the pristine fixture
    judge = {"name": "endstate_harness.graders:judged_tests", "args": {"start_dir": "tests"}}
    absent(make_task(good(id="judged", graders=graders(judge, PIN, SKIPS, SCOPE)), name="judged",
                     fixture=HELPER_FIXTURE), "ES312")  # fmt: skip
    # ... but a judge without the visible tests takes nothing from the fixture
    hidden = {"name": "endstate_harness.graders:judged_tests",
              "args": {"start_dir": "tests", "visible": False}}  # fmt: skip
    assert found(make_task(good(id="hidden", graders=graders(hidden, PIN, SKIPS, SCOPE)),
                           name="hidden", fixture=HELPER_FIXTURE), "ES312")  # fmt: skip
