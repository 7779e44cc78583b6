"""ES508 — tests that judged_tests cannot run: each shape that draws it, and sound neighbours."""

from __future__ import annotations

import copy
from pathlib import Path

from tests.rules.conftest import GUIDE_GRADERS, TaskBuilder, good
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
