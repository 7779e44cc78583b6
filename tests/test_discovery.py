"""The test-command analysis: parsing real-world commands, and test_files checked against the
real runners (unittest and pytest run on the same tree must find exactly the same files)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from endstate_author.engine.context import walk_tree
from endstate_author.engine.discovery import (
    builtin_name,
    from_tests_pass,
    grader_command,
    grader_names,
    missing_module_targets,
    parse_command,
    split_grader,
    test_files,
)
from endstate_harness.graders import BUILTIN_GRADERS
from endstate_harness.graders.names import GRADERS
from endstate_harness.graders.reference import REFERENCE_GRADERS


@pytest.mark.parametrize(
    ("command", "runner", "cwd", "start", "top", "pattern", "targets"),
    [
        (
            "python -m unittest discover -s tests -t . -q",
            "unittest-discover",
            ".",
            "tests",
            ".",
            "test*.py",
            (),
        ),
        ("python3 -m unittest -q", "unittest-discover", ".", ".", None, "test*.py", ()),
        (
            "python -m unittest tests.test_x",
            "unittest-modules",
            ".",
            None,
            None,
            "test*.py",
            ("tests.test_x",),
        ),
        (
            "python -m unittest tests/test_x.py",
            "unittest-modules",
            ".",
            None,
            None,
            "test*.py",
            ("tests/test_x.py",),
        ),
        ("python -m pytest -q tests", "pytest", ".", None, None, "test*.py", ("tests",)),
        ("pytest", "pytest", ".", None, None, "test*.py", ()),
        ("cd src && python -m unittest", "unittest-discover", "src", "src", None, "test*.py", ()),
        (
            "python -m unittest discover tests 'test_*.py' .",
            "unittest-discover",
            ".",
            "tests",
            ".",
            "test_*.py",
            (),
        ),
        (
            "python -I -S -m unittest discover -s pkg/tests/ -t . 2>&1",
            "unittest-discover",
            ".",
            "pkg/tests",
            ".",
            "test*.py",
            (),
        ),
        (
            "PYTHONPATH=. python -m pytest tests/test_a.py::test_b -k 'x or y'",
            "pytest",
            ".",
            None,
            None,
            "test*.py",
            ("tests/test_a.py",),
        ),
        (
            "cd src; python3.11 -m unittest discover --start-directory=tests"
            " --top-level-directory=.",
            "unittest-discover",
            "src",
            "src/tests",
            "src",
            "test*.py",
            (),
        ),
        (
            "python -m unittest discover -p '*_test.py' -s tests",
            "unittest-discover",
            ".",
            "tests",
            None,
            "*_test.py",
            (),
        ),
        (
            "/usr/bin/python3 -m unittest -v tests.test_x.Case.test_y",
            "unittest-modules",
            ".",
            None,
            None,
            "test*.py",
            ("tests.test_x.Case.test_y",),
        ),
    ],
)
def test_parse_known_commands(
    command: str,
    runner: str,
    cwd: str,
    start: str | None,
    top: str | None,
    pattern: str,
    targets: tuple[str, ...],
) -> None:
    cmd = parse_command(command)
    assert (cmd.runner, cmd.cwd, cmd.start_dir, cmd.top_level_dir, cmd.pattern, cmd.targets) == (
        runner,
        cwd,
        start,
        top,
        pattern,
        targets,
    )


@pytest.mark.parametrize(
    "command",
    [
        "make test",
        "sh run_tests.sh",
        "bash -c 'python -m unittest'",
        "python -m unittest || true",
        "python -m unittest | tail -1",
        "python -c 'import sys; sys.exit(0)'",
        "cd ../elsewhere && python -m unittest",
        "cd /tmp && python -m unittest",
        "python -m unittest discover -s",
        "python -m unittest 'unbalanced",
        "python -m mypy .",
        "",
    ],
)
def test_parse_unknown_commands(command: str) -> None:
    cmd = parse_command(command)
    assert cmd.runner == "unknown" and not cmd.known and cmd.reason


def test_tests_pass_defaults_and_bad_args() -> None:
    cmd = from_tests_pass({})
    assert (cmd.runner, cmd.start_dir, cmd.top_level_dir, cmd.pattern) == (
        "unittest-discover",
        "tests",
        ".",
        "test*.py",
    )
    assert from_tests_pass({"start_dir": ["tests"]}).runner == "unknown"
    assert from_tests_pass({"start_dir": "../x"}).runner == "unknown"


def test_grader_names() -> None:
    assert split_grader("endstate.evals.graders.command_succeeds") == (
        "endstate.evals.graders",
        "command_succeeds",
    )
    assert split_grader("nodots") is None
    assert builtin_name("endstate.evals.graders:no_new_skips") == "no_new_skips"
    assert builtin_name("endstate_harness.graders:tests_pass") == "tests_pass"
    assert builtin_name("endstate.evals.graders:tests_pass") is None  # not in endstate 0.3.0
    assert builtin_name("mytasks.graders:no_secrets") is None
    cmd = grader_command("endstate.evals.graders:command_succeeds", {"command": "pytest -q"})
    assert cmd is not None and cmd.runner == "pytest"
    assert grader_command("endstate.evals.graders:command_succeeds", {"command": 3}) is None
    assert grader_command("endstate.evals.graders:files_unchanged", {"paths": []}) is None


# ----- test_files against the real runners ----------------------------------------------------


def _case(cls: str, method: str) -> str:
    return (
        f"import unittest\n\n\nclass {cls}(unittest.TestCase):\n"
        f"    def {method}(self):\n        pass\n"
    )


TREE = {
    "pkg/__init__.py": "",
    "pkg/core.py": "def f():\n    return 1\n",
    "tests/__init__.py": "",
    "tests/test_top.py": _case("T", "test_a"),
    "tests/sub/__init__.py": "",
    "tests/sub/test_sub.py": _case("S", "test_b"),
    "tests/nopkg/test_hidden.py": _case("H", "test_c"),
    "tests/helper_test.py": _case("U", "test_d"),
    "tests/test-dash.py": "import unittest\n",
    "tests/data.txt": "not python\n",
}


def _write(root: Path) -> None:
    for rel, text in TREE.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def _unittest_files(root: Path, args: list[str]) -> list[str]:
    """The files unittest really loads: module names from ``-v`` output, mapped to files."""
    proc = subprocess.run(
        [sys.executable, "-B", "-m", "unittest", *args, "-v"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    modules = set(re.findall(r"^test_\w+ \(([\w.]+)\.\w+\.test_\w+\)", proc.stderr, re.M))
    out = []
    for module in modules:
        path = Path(*module.split("."))
        out.append(path.with_suffix(".py").as_posix())
    return sorted(out)


@pytest.mark.parametrize(
    "command",
    [
        "python -m unittest discover -s tests -t .",
        "python -m unittest discover -s tests",
        "python -m unittest",
        "python -m unittest discover -s tests -t . -p '*_test.py'",
        "python -m unittest tests.test_top tests.sub.test_sub",
    ],
)
def test_test_files_agree_with_real_unittest(tmp_path: Path, command: str) -> None:
    _write(tmp_path)
    cmd = parse_command(command)
    predicted = test_files(walk_tree(tmp_path), cmd)
    args = command.split("-m unittest", 1)[1].replace("'", "").split()
    real = _unittest_files(tmp_path, args)
    if cmd.start_dir == "tests" and cmd.top_level_dir is None:
        # with the start folder as top level, unittest names modules from inside it
        real = sorted(f"tests/{p}" for p in real)
    assert real, "the real runner found nothing: the comparison would be empty"
    assert predicted == real


def test_test_files_agree_with_real_pytest(tmp_path: Path) -> None:
    _write(tmp_path)
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "tests"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    real = sorted({line.split("::")[0] for line in proc.stdout.splitlines() if "::" in line})
    assert real
    predicted = test_files(walk_tree(tmp_path), parse_command("python -m pytest -q tests"))
    assert predicted == real


def test_test_files_unknown_is_empty_and_missing_modules(tmp_path: Path) -> None:
    _write(tmp_path)
    entries = walk_tree(tmp_path)
    assert test_files(entries, parse_command("make test")) == []
    files = [rel for rel, e in entries.items() if not e.is_dir]
    cmd = parse_command("python -m unittest tests.test_top tests.test_gone")
    assert missing_module_targets(files, cmd) == ["tests.test_gone"]


def test_grader_names_match_the_harness_table() -> None:
    """discovery's grader names (read from the records, so lint never imports the graders)
    are the resolver's, and the test-running graders are the records that say they run tests."""
    assert set(REFERENCE_GRADERS) == grader_names.REFERENCE_NAMES
    assert set(BUILTIN_GRADERS) == grader_names.HARNESS_NAMES
    runs = {r.name: r.runs_tests for r in GRADERS}
    assert grader_names.TEST_GRADERS == {n for n, how in runs.items() if how == "unittest"}
    for name, how in runs.items():
        args = {"command": "python -m unittest discover -s tests", "start_dir": "tests"}
        command = grader_names.grader_command(f"endstate_harness.graders:{name}", args)
        assert (command is not None) == bool(how), name
