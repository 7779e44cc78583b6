"""The judge's variants (prove's mutants in one judge and one child): each variant is judged
as it would be on its own, in processes of its own, in every sandbox the judge runs in."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from endstate_harness.graders import judged_tests
from endstate_harness.graders.judge.grader import judge_variants
from endstate_harness.inside.judge_child import WARM_FILES, preimports
from tests.conftest import require_walls
from tests.harness.test_judge import _box, backend, make_task  # noqa: F401

SOLVED = "def add(a, b):\n    return a + b\n"
WRONG = "def add(a, b):\n    return a * b\n"
LEAVES_STATE = (
    "import sys\n"
    "LEFT = sys.modules.setdefault('leftover', type(sys)('leftover'))\n"
    "LEFT.imports = getattr(LEFT, 'imports', 0) + 1\n"
    "def add(a, b):\n    return a + b if LEFT.imports == 1 else a - b\n"
)
EXITS = "import os\n\ndef add(a, b):\n    os._exit(3)\n"


def _variants(kind: str, task: Path, variants: list[dict[str, str | None]],
              timeout_s: float = 120.0, ended: bool = True) -> list[bool]:
    with _box(kind, task / "fixture") as box:
        box.write_text("pkg/calc.py", SOLVED)
        box.seal()
        box.stage(task / "holdout")
        verdicts = judge_variants(box, variants, timeout_s=timeout_s)
        if ended:  # a batch that stopped on a hung variant leaves its tree as it was then
            after = box.live.joinpath("pkg/calc.py").read_text()
            assert after == SOLVED, "a variant's file is written back after it"
            assert judged_tests(box).passed, "the tree grades as before after the batch"
    return [v.passed for v in verdicts]


def test_each_variant_gets_its_own_verdict(backend: str, tmp_path: Path) -> None:  # noqa: F811
    task = make_task(tmp_path / "task")
    got = _variants(backend, task, [
        {"pkg/calc.py": WRONG}, {"pkg/calc.py": SOLVED}, {"pkg/calc.py": None},
        {"pkg/calc.py": "def add(a, b):\n    return b + a\n"},
    ])
    assert got == [False, True, False, True]


def test_no_variant_sees_what_another_left_in_memory(tmp_path: Path) -> None:
    """The mutant counts its imports in a module it leaves in ``sys.modules``: in a shared
    process the second variant would see the first's count and fail."""
    task = make_task(tmp_path / "task")
    got = _variants("local-no-walls", task, [{"pkg/calc.py": LEAVES_STATE}] * 2)
    assert got == [True, True]


def test_a_variant_whose_child_dies_fails_and_stops_the_batch(tmp_path: Path) -> None:
    task = make_task(tmp_path / "task")
    got = _variants("local-no-walls", task, [
        {"pkg/calc.py": SOLVED}, {"pkg/calc.py": EXITS}, {"pkg/calc.py": SOLVED}])
    assert got[:2] == [True, False]
    assert len(got) in (2, 3)  # graded apart by the caller when the batch stopped


def test_a_variant_that_hangs_fails_in_its_time_and_stops_the_batch(tmp_path: Path) -> None:
    require_walls()
    task = make_task(tmp_path / "task")
    hangs = "def add(a, b):\n    while True:\n        pass\n"
    started = time.monotonic()
    got = _variants("local", task, [{"pkg/calc.py": hangs}, {"pkg/calc.py": SOLVED}], 2.0,
                    ended=False)
    assert got == [False]
    assert time.monotonic() - started < 20


def test_a_variant_path_out_of_the_tree_is_refused(tmp_path: Path) -> None:
    task = make_task(tmp_path / "task")
    got = _variants("local-no-walls", task, [{"../escape.py": "x = 1\n"}])
    assert got == [False]
    assert not (tmp_path / "task" / "escape.py").exists()


def test_a_batch_larger_than_a_command_line_is_judged(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two dozen mutants of a 10 KB module are more than one command-line argument (128 KiB)
    or one message to the warm judge may hold: the batch still gets a verdict per variant,
    with the judge started either way."""
    task = make_task(tmp_path / "task")
    filler = "# " + "x" * 78 + "\n"
    big_solved = SOLVED + filler * 1600  # ~130 KB each
    big_wrong = WRONG + filler * 1600
    for warm in ("1", "0"):
        monkeypatch.setenv("ENDSTATE_WARM", warm)
        got = _variants("local-no-walls", task,
                        [{"pkg/calc.py": big_wrong}, {"pkg/calc.py": big_solved}])
        assert got == [False, True], f"ENDSTATE_WARM={warm}"



def test_a_variants_tests_stop_at_its_first_failure(tmp_path: Path) -> None:
    """A variant asks only whether the tests reject it: after the first failing test, the rest
    do not run (three tests fail on this mutant; one ran). Graded alone, every test runs."""
    task = make_task(tmp_path / "task")
    (task / "holdout" / "tests" / "test_more.py").write_text(
        "import unittest\n\nfrom pkg.calc import add\n\n\n"
        "class MoreTest(unittest.TestCase):\n"
        "    def test_a(self):\n        self.assertEqual(add(2, 2), 4)\n"
        "    def test_b(self):\n        self.assertEqual(add(3, 1), 4)\n"
    )
    wrong = WRONG.replace("*", "-")
    with _box("local-no-walls", task / "fixture") as box:
        box.write_text("pkg/calc.py", SOLVED)
        box.seal()
        box.stage(task / "holdout")
        batched = judge_variants(box, [{"pkg/calc.py": wrong}])
    with _box("local-no-walls", task / "fixture") as box:
        box.write_text("pkg/calc.py", wrong)
        box.seal()
        box.stage(task / "holdout")
        alone = judged_tests(box)
    details = [next(c.detail for c in v.checks if c.name.endswith("all tests passed"))
               for v in (*batched, alone)]
    assert details[0].startswith("1 of 1 tests did not pass"), details[0]
    assert details[1].startswith("4 of 4 tests did not pass"), details[1]


# --- the warm-up before the first variant (judge_child._warm) --------------------------------

USES_STDLIB = (
    "import dataclasses\n\n@dataclasses.dataclass\nclass Pair:\n    a: int\n    b: int\n\n"
    "def add(a, b):\n    p = Pair(a, b)\n    return p.a + p.b\n"
)


def test_variants_that_import_standard_modules_are_judged_as_alone(tmp_path: Path) -> None:
    task = make_task(tmp_path / "task")
    wrong = USES_STDLIB.replace("p.a + p.b", "p.a * p.b")
    got = _variants("local", task, [{"pkg/calc.py": USES_STDLIB}, {"pkg/calc.py": wrong},
                                    {"pkg/calc.py": USES_STDLIB}])
    assert got == [True, False, True]


def test_a_tree_module_named_like_a_standard_one_is_never_run_ahead(tmp_path: Path) -> None:
    """The tree's ``calendar.py`` notes the process that ran it; had the warm-up imported it in
    the forking process, each variant would find it run by another process than the one that
    imported the tests' modules (each test's process is forked from that one: its parent)."""
    task = make_task(tmp_path / "task")
    (task / "fixture" / "calendar.py").write_text("import os\nRAN_IN = os.getpid()\n")
    (task / "fixture" / "pkg" / "when.py").write_text("import calendar\n")  # seen by the warm-up
    calc = ("import os\nimport calendar\n\ndef add(a, b):\n"
            "    return a + b if calendar.RAN_IN == os.getppid() else a - b\n")
    got = _variants("local-no-walls", task, [{"pkg/calc.py": calc}] * 2)
    assert got == [True, True]


def test_only_standard_modules_are_imported_ahead_and_none_when_the_tree_shadows_one() -> None:
    stdlib = {"json", "dataclasses", "xml", "antigravity", "calendar"}
    imported = {"json", "dataclasses", "xml.etree.ElementTree", "requests", "pkg.calc",
                "antigravity"}
    assert preimports(imported, {"pkg", "tests"}, stdlib) == [
        "dataclasses", "json", "xml.etree.ElementTree"]
    assert preimports(imported, {"pkg", "calendar"}, stdlib) == []
    assert preimports(imported, {"pkg"}, None) == []


def test_a_tree_larger_than_the_warm_up_is_judged_as_alone(tmp_path: Path) -> None:
    """Past ``WARM_FILES`` the variants compile what they import themselves."""
    task = make_task(tmp_path / "task")
    many = task / "fixture" / "pkg" / "many"
    many.mkdir()
    (many / "__init__.py").write_text("")
    for n in range(WARM_FILES + 5):
        (many / f"m{n:04d}.py").write_text(f"VALUE = {n}\n")
    last = f"m{WARM_FILES + 4:04d}"
    uses = (f"from pkg.many.{last} import VALUE\n\ndef add(a, b):\n"
            f"    return a + b + VALUE - {WARM_FILES + 4}\n")
    got = _variants("local-no-walls", task, [{"pkg/calc.py": uses},
                                             {"pkg/calc.py": uses.replace("VALUE -", "VALUE +")}])
    assert got == [True, False]
