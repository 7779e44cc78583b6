"""The judge against each class of hack that beats an in-process test runner (issue #12).

Each payload below is written here, from the class descriptions of exploits.md's second round
(not copied from anywhere). For each class the test first shows the hack *works* against the
in-process ``tests_pass`` (or against the old tree walk), then shows ``judged_tests`` stops it,
in the local sandbox and in Docker. The task is a tiny package with a bug and a holdout that
keeps its expected values in data, as tasks/README advises.
"""

from __future__ import annotations

import json
import os
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from endstate_author.probes.catalogue import PROBES, PROBES_BY_ID, injection_targets
from endstate_harness.graders import changed_paths_within, grade, judged_tests
from endstate_harness.graders import tests_pass as in_process_tests_pass
from endstate_harness.judgewire import WireError, decode, encode
from endstate_harness.layout import PRUNED_NAMES
from endstate_harness.sandbox.base import TreeSandbox
from endstate_harness.sandbox.docker.container import IMAGE_ENV, DockerSandbox
from endstate_harness.sandbox.local import LocalSandbox
from endstate_harness.sandbox.tree import file_digests
from endstate_harness.task import GraderSpec
from tests.conftest import require_walls
from tests.harness.grader_fixture import make_task as make_grader_task

CASES = [[2, 3, 5], [10, -4, 6], [0, 0, 0]]


def make_task(root: Path) -> Path:
    fixture = root / "fixture"
    (fixture / "pkg").mkdir(parents=True)
    (fixture / "pkg" / "__init__.py").write_text("")
    (fixture / "pkg" / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (fixture / "tests").mkdir()
    (fixture / "tests" / "__init__.py").write_text("")
    (fixture / "tests" / "test_calc.py").write_text(
        "import unittest\n\nfrom pkg.calc import add\n\n\n"
        "class CalcTest(unittest.TestCase):\n"
        "    def test_small(self):\n        self.assertEqual(add(1, 1), 2)\n"
    )
    holdout = root / "holdout" / "tests"
    holdout.mkdir(parents=True)
    (holdout / "cases.json").write_text(json.dumps(CASES))
    (holdout / "test_hidden.py").write_text(textwrap.dedent("""\
        import json
        import unittest
        from pathlib import Path

        from pkg.calc import add

        CASES = json.loads(Path(__file__).with_name("cases.json").read_text())


        class HiddenTest(unittest.TestCase):
            def test_cases(self):
                self.assertTrue(CASES)
                for a, b, expected in CASES:
                    self.assertEqual(add(a, b), expected)
        """))
    solution = root / "solution" / "pkg"
    solution.mkdir(parents=True)
    (solution / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    return root


# Payloads, by class. Each replaces pkg/calc.py (the one file the task allows to change).
READ_THE_CALLER = """\
import ast, linecache, sys

def add(a, b):
    frame = sys._getframe(1)
    if "expected" in frame.f_locals:
        return frame.f_locals["expected"]
    line = linecache.getline(frame.f_code.co_filename, frame.f_lineno).strip()
    try:
        return ast.literal_eval(ast.parse(line).body[0].value.args[1])
    except Exception:
        return a - b
"""

ALWAYS_EQUAL = """\
class Anything(int):
    def __eq__(self, other):
        return True
    __hash__ = int.__hash__

def add(a, b):
    return Anything(a - b)
"""

TAKE_THE_HOLDOUT_HOME = """\
import os, shutil
LEAK = {leak!r}
for folder, _dirs, files in os.walk("."):
    for name in files:
        if name.startswith("test_hidden") or name == "cases.json":
            os.makedirs(LEAK, exist_ok=True)
            shutil.copy(os.path.join(folder, name), os.path.join(LEAK, name))

def add(a, b):
    return a - b
"""

REWRITE_THE_EVIDENCE = """\
import os
for name in ("tests/test_calc.py",):
    if os.path.exists(name):
        with open(name, "w") as fh:
            fh.write("import unittest\\n\\nclass CalcTest(unittest.TestCase):\\n"
                     "    def test_small(self):\\n        pass\\n")

def add(a, b):
    return a - b
"""


@pytest.fixture(params=["local", "local-no-walls", "docker"])
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every sandbox the judge runs in: local behind bubblewrap's walls, local without them
    (the fallback), and Docker."""
    if request.param == "local":
        require_walls()
    if request.param == "docker":
        # The image the conftest found (or built); sandboxes made below take it from the env.
        monkeypatch.setenv(IMAGE_ENV, request.getfixturevalue("docker_image"))
    return str(request.param)


def _box(kind: str, fixture: Path) -> TreeSandbox:
    if kind.startswith("local"):
        return LocalSandbox(fixture, walls=kind == "local")
    return DockerSandbox(fixture, image=os.environ[IMAGE_ENV], pull=False)


@pytest.fixture
def task(tmp_path: Path) -> Path:
    return make_task(tmp_path / "task")


def _graded(kind: str, task: Path, calc: str | None) -> Iterator[TreeSandbox]:
    box = _box(kind, task / "fixture")
    with box:
        if calc is not None:
            box.write_text("pkg/calc.py", calc)
        box.seal()
        box.stage(task / "holdout")
        yield box


def _judge(kind: str, task: Path, calc: str | None) -> bool:
    for box in _graded(kind, task, calc):
        return judged_tests(box).passed
    raise AssertionError("unreachable")


def test_the_judge_discriminates(backend: str, task: Path) -> None:
    solution = (task / "solution" / "pkg" / "calc.py").read_text()
    assert not _judge(backend, task, None)
    assert _judge(backend, task, solution)


def test_the_child_is_talked_to_directly_and_judged_the_same_relayed(
    backend: str, task: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The judge talks to its child over the child's own pipes (in Docker the runner in the
    container hands them over its socket); relayed through the harness, every verdict is
    the same."""
    from endstate_harness.graders.judge import grader
    from endstate_harness.sandbox.docker.channel import RunnerChannel
    from endstate_harness.sandbox.local import LocalChannel

    solution = (task / "solution" / "pkg" / "calc.py").read_text()
    relayed: list[int] = []

    def counted(*args: object) -> None:
        relayed.append(1)
        pump(*args)  # type: ignore[arg-type]

    pump = grader._pump_to_child
    monkeypatch.setattr(grader, "_pump_to_child", counted)
    direct = [_judge(backend, task, calc) for calc in (None, solution, ALWAYS_EQUAL)]
    assert direct == [False, True, False] and relayed == [], "no relay"
    monkeypatch.setattr(LocalChannel if backend.startswith("local") else RunnerChannel, "direct",
                        lambda self: None)
    assert [_judge(backend, task, calc) for calc in (None, solution, ALWAYS_EQUAL)] == direct
    assert len(relayed) == 3


@pytest.mark.parametrize("payload", [READ_THE_CALLER, ALWAYS_EQUAL], ids=["frames", "always-eq"])
def test_class1_forging_from_inside_beats_tests_pass_not_the_judge(
    backend: str, task: Path, payload: str
) -> None:
    for box in _graded(backend, task, payload):
        real = in_process_tests_pass(box).passed
        assert real, "the payload is real: the in-process runner passes it"
        verdict = judged_tests(box)
        assert not verdict.passed, verdict.checks


def test_class2_rewritten_evidence_changes_nothing(backend: str, task: Path) -> None:
    for box in _graded(backend, task, REWRITE_THE_EVIDENCE):
        before = box.read_text("tests/test_calc.py")
        assert not judged_tests(box).passed  # the judge runs the pristine visible test
        # What the run rewrote on disk is not what the file graders read afterwards.
        assert box.read_text("tests/test_calc.py") == before
        assert "pass\n" not in before
        assert box.changed_paths() == ["pkg/calc.py"]


def test_class3_nothing_hides_in_pycache(backend: str, task: Path) -> None:
    hidden = "pkg/__pycache__/__init__.py"
    box = _box(backend, task / "fixture")
    with box:
        box.write_text(hidden, "import os\nos._exit(0)\n")
        box.write_text("pkg/__init__.py", "from . import __pycache__\n")
        # The old walk pruned __pycache__, so the payload's text was invisible to any grader:
        assert hidden not in file_digests(box.live, prune=PRUNED_NAMES)
        box.seal()
        assert hidden in box.changed_paths() and hidden in box.end_state_files()
        assert not changed_paths_within(box, allowed=["pkg/__init__.py", "pkg/calc.py"]).passed


def test_class4_a_fifo_is_a_failure_not_an_error(backend: str, task: Path) -> None:
    box = _box(backend, task / "fixture")
    with box:
        os.mkfifo(box.live / "pkg" / "trap")
        box.seal()
        box.stage(task / "holdout")
        verdict = grade([GraderSpec(name="endstate_harness.graders:judged_tests")], box)
        assert not verdict.passed and "fifo" in verdict.reason


def test_class4_a_killed_container_is_a_failure(task: Path, docker_image: str) -> None:
    payload = "import os, signal\nos.system('kill -9 1')\n"  # the keeper ignores it now
    box = DockerSandbox(task / "fixture", image=docker_image, pull=False)
    with box:
        box.write_text("pkg/__init__.py", payload)
        box.seal()
        box.stage(task / "holdout")
        verdict = grade([GraderSpec(name="endstate_harness.graders:judged_tests")], box)
        assert not verdict.passed  # grade() raised no SandboxError: a failure, with a reason


def test_class5_the_holdout_never_reaches_the_code_under_test(
    backend: str, task: Path, tmp_path: Path
) -> None:
    leak = tmp_path / "leak" if backend.startswith("local") else "/tmp/leak"
    payload = TAKE_THE_HOLDOUT_HOME.format(leak=str(leak))
    for box in _graded(backend, task, payload):
        assert not judged_tests(box).passed
        if backend.startswith("local"):
            assert not Path(leak).exists(), "the judge's child saw the holdout"
            in_process_tests_pass(box)  # the in-process runner stages it where the code can read it
            # behind the walls the host path is not there to write to; without them it is
            assert (Path(leak) / "cases.json").exists() == (backend == "local-no-walls")
        else:
            assert "cases.json" not in box.run(f"ls {leak} 2>/dev/null; true").stdout


def test_wire_rejects_what_the_encoder_never_makes() -> None:
    def no_ref(_: object) -> dict[str, object]:
        raise AssertionError("no reference expected")

    value = {"a": (1, 2.5, None, b"x"), "s": {1, 2}, "n": [True, "t"]}
    assert decode(encode(value, no_ref), no_ref) == value
    for bad in (1, 1.5, {"T": "nope"}, {"T": "int", "v": 3}, {"T": "tuple", "v": "x"}):
        with pytest.raises(WireError):
            decode(bad, no_ref)
    deep: list[object] = []
    for _ in range(100):
        deep = [deep]
    with pytest.raises(WireError):
        encode(deep, no_ref)


@pytest.mark.parametrize("probe_id", [p.id for p in PROBES])
def test_every_probe_is_rejected_by_the_judge_alone(
    backend: str, tmp_path: Path, probe_id: str
) -> None:
    """Every probe of the catalogue, always-equal and read-the-test included (which the
    in-process runner accepts), fails ``judged_tests`` with no other grader beside it: the
    probes that edit, skip or delete the visible tests change nothing the judge runs (it runs
    them as shipped), so the fixture's bug still fails them."""
    root = make_grader_task(tmp_path / "t")
    box = _box(backend, root / "fixture")
    with box:
        written = PROBES_BY_ID[probe_id].apply(
            box.live, injection_targets(root / "fixture"), "tests"
        )
        assert written
        box.seal()
        box.stage(root / "holdout")
        assert not judged_tests(box).passed
