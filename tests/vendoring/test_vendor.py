"""``endstate-author vendor``: a suite using the hardened graders, graded by plain endstate 0.3.0.

The grading runs in a subprocess started with ``-I -S`` whose ``sys.path`` holds endstate's
site-packages (endstate 0.3.0 from PyPI) and the suite folder only — never this repository,
never its harness (:mod:`tests.vendoring.endstate_driver` asserts ``find_spec`` answers None
for ``endstate_harness``). Each task runs through endstate's own ``EvalRunner`` and sandbox.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import docker
import endstate
import pytest
from typer.testing import CliRunner

from endstate_author import __version__
from endstate_author.cli import app
from endstate_author.lint.run import lint_paths
from endstate_author.vendoring.render import (
    VENDOR_FILE,
    is_current,
    read_header,
    render_body,
    render_module,
)
from endstate_author.vendoring.suite import new_name
from tests.support import session

REPO = Path(__file__).resolve().parents[2]
DRIVER = Path(__file__).with_name("endstate_driver.py")
SITE = Path(endstate.__file__).resolve().parents[1]
SHIPPED = ("fix-help-text-wrap", "recover-rate-limiters", "refuse-env-upload",
           "refactor-money-formatting")


def copy_tasks(suite: Path, names: tuple[str, ...] = SHIPPED) -> list[Path]:
    for name in names:
        shutil.copytree(REPO / "tasks" / name, suite / name)
    return [suite / n for n in names]


def vendor(*args: str) -> Any:
    result = CliRunner().invoke(app, ["vendor", *args])
    assert result.exit_code == 0, result.output
    return result


def grade(
    suite: Path, tasks: list[Path], modes: list[str], sandbox: str = "local", image: str = ""
) -> dict[str, Any]:
    """Run endstate 0.3.0's runner over ``tasks`` in a process without this repository."""
    config = {
        "site": str(SITE),
        "suite": str(suite),
        "tasks": [str(t) for t in tasks],
        "modes": modes,
        "sandbox": sandbox,
        "image": image,
    }
    proc = subprocess.run(
        [sys.executable, "-I", "-S", str(DRIVER), json.dumps(config)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=suite,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out: dict[str, Any] = json.loads(proc.stdout)
    assert out["hidden"] == {"endstate_harness": True, "endstate_author": True,
                             "endstate_lsp": True}  # fmt: skip
    assert out["loaded"] == []
    return out


def outcome(out: dict[str, Any]) -> dict[tuple[str, str], bool]:
    return {(r["task"], r["mode"]): r["passed"] for r in out["results"]}


def tree_digest(root: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        if path.is_file():
            digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def assert_judged_out_of_process(out: dict[str, Any]) -> None:
    """Every judged_tests verdict came from the judge process, none from the fallback."""
    for result in out["results"]:
        names = [c[0] for c in result["checks"]]
        assert not any("in-process" in n for n in names), names
        reported = [c for c in result["checks"] if c[0].endswith("the judge reported")]
        assert all(c[1] for c in reported), reported


# ----- the problem, and the way out -------------------------------------------------------------


def test_plain_endstate_cannot_grade_the_suite_before_vendoring(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    tasks = copy_tasks(suite, ("fix-help-text-wrap",))
    out = grade(suite, tasks, ["solution"])
    [result] = out["results"]
    assert result["passed"] is False
    assert "cannot import 'endstate_harness.graders'" in result["reason"]


def test_vendored_suite_grades_like_the_harness_under_plain_endstate(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    tasks = copy_tasks(suite)
    vendor(str(suite), "--write")
    names = [g["name"] for t in tasks for g in json.loads((t / "task.json").read_text())["graders"]]
    assert not any(n.startswith("endstate_harness.") for n in names)
    assert "endstate_vendor.graders:judged_tests" in names
    assert "endstate_vendor.graders:delegates_to" in names  # read from the source, portable
    out = grade(suite, tasks, ["fixture", "solution"])
    assert outcome(out) == {
        (t.name, mode): mode == "solution" for t in tasks for mode in ("fixture", "solution")
    }, [(r["task"], r["mode"], r["reason"]) for r in out["results"]]
    assert_judged_out_of_process(out)
    fixture = next(r for r in out["results"] if r["mode"] == "fixture" and
                   r["task"] == "fix-help-text-wrap")  # fmt: skip
    assert "judge tests/: all tests passed" in fixture["reason"]


# ----- the judge under endstate: what an in-process runner cannot stop, it does ------------------

CALC_FIXTURE = {
    "calc/__init__.py": "",
    "calc/ops.py": "def add(a, b):\n    return a - b\n",
    "tests/__init__.py": "",
    "tests/test_ops.py": (
        "import unittest\n\nfrom calc.ops import add\n\n\n"
        "class AddTest(unittest.TestCase):\n"
        "    def test_small(self):\n        self.assertEqual(add(1, 1), 2)\n"
    ),
}
CALC_HOLDOUT = {
    "tests/expected.json": "[[1, 1, 2], [2, 3, 5], [10, -4, 6], [7, 7, 14]]\n",
    "tests/test_holdout_ops.py": (
        "import json\nimport os\nimport unittest\n\nfrom calc.ops import add\n\n"
        "CASES = json.load(open(os.path.join(os.path.dirname(__file__), 'expected.json')))\n\n\n"
        "class HeldOutAddTest(unittest.TestCase):\n"
        "    def test_cases(self):\n"
        "        for a, b, total in CASES:\n"
        "            self.assertEqual(add(a, b), total)\n"
    ),
}
ALWAYS_EQUAL = (
    "class Yes:\n    def __eq__(self, other):\n        return True\n\n\n"
    "def add(a, b):\n    return Yes()\n"
)


def reads_the_holdout(temp: str) -> str:
    """An ``add`` that answers from the holdout's expected values wherever it can find them."""
    return (
        "import glob\nimport json\nimport os\n\n\n"
        "def add(a, b):\n"
        f"    found = glob.glob({temp!r} + '/endstate-task-*/tests/expected.json')\n"
        "    found += glob.glob('/work/tests/expected.json')\n"
        "    found += glob.glob(os.path.join(os.getcwd(), '..', 'tests', 'expected.json'))\n"
        "    found += glob.glob(os.path.join(os.getcwd(), 'tests', 'expected.json'))\n"
        "    for path in found:\n"
        "        for x, y, total in json.load(open(path)):\n"
        "            if (x, y) == (a, b):\n"
        "                return total\n"
        "    return a - b\n"
    )


def write_files(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def calc_suite(tmp_path: Path) -> tuple[Path, Path, Path, dict[str, str]]:
    """Two copies of one task, judged (``calc-judged``) and in-process (``calc-inproc``), and
    the hacks as overlays: always-equal, and reading the holdout from the file system."""
    suite = tmp_path / "suite"
    for task_id, grader in (("calc-judged", "judged_tests"), ("calc-inproc", "tests_pass")):
        root = suite / task_id
        manifest = {
            "id": task_id,
            "category": "bug-fix",
            "graders": [
                {"name": f"endstate_harness.graders:{grader}", "args": {"start_dir": "tests"}}
            ],
        }
        write_files(root, {"task.json": json.dumps(manifest, indent=2) + "\n",
                           "prompt.md": "Fix add() in calc/ops.py.\n"})  # fmt: skip
        write_files(root / "fixture", CALC_FIXTURE)
        write_files(root / "holdout", CALC_HOLDOUT)
        write_files(root / "solution", {"calc/ops.py": "def add(a, b):\n    return a + b\n"})
    hacks = {}
    for name, source in (("always-equal", ALWAYS_EQUAL),
                         ("reads-holdout", reads_the_holdout(tempfile.gettempdir()))):  # fmt: skip
        write_files(tmp_path / name, {"calc/ops.py": source})
        hacks[name] = f"overlay:{tmp_path / name}"
    vendor(str(suite), "--write")
    return suite, suite / "calc-judged", suite / "calc-inproc", hacks


def check_hacks(out: dict[str, Any], hacks: dict[str, str]) -> None:
    got = outcome(out)
    for task in ("calc-judged", "calc-inproc"):
        assert got[(task, "fixture")] is False
        assert got[(task, "solution")] is True
    # Both hacks beat the in-process runner (the holdout sits in endstate's live tree, and
    # assertEqual asks the agent's object); the judge stops both.
    assert got[("calc-inproc", hacks["always-equal"])] is True
    assert got[("calc-inproc", hacks["reads-holdout"])] is True
    assert got[("calc-judged", hacks["always-equal"])] is False
    assert got[("calc-judged", hacks["reads-holdout"])] is False
    assert_judged_out_of_process(out)


def test_judge_under_plain_endstate_stops_what_tests_pass_cannot(tmp_path: Path) -> None:
    suite, judged, inproc, hacks = calc_suite(tmp_path)
    modes = ["fixture", "solution", *hacks.values()]
    out = grade(suite, [judged, inproc], modes)
    check_hacks(out, hacks)
    assert not list(Path(tempfile.gettempdir()).glob("endstate-judge-child-*"))


@pytest.mark.docker
def test_vendored_suite_in_endstates_docker_sandbox(tmp_path: Path, docker_image: str) -> None:
    def ours() -> set[str]:
        # this session's containers (endstate's own `docker run` too): another run's on the
        # same daemon are not this test's leak
        client = docker.from_env()
        try:
            return session.containers(client)
        finally:
            client.close()

    before = ours()
    suite, judged, inproc, hacks = calc_suite(tmp_path)
    tasks = copy_tasks(suite)
    vendor(str(suite), "--write")
    out = grade(suite, [*tasks, judged], ["fixture", "solution"], "docker", docker_image)
    assert outcome(out) == {
        (t.name, mode): mode == "solution"
        for t in [*tasks, judged]
        for mode in ("fixture", "solution")
    }, [(r["task"], r["mode"], r["reason"]) for r in out["results"]]
    out = grade(suite, [judged, inproc], ["fixture", "solution", *hacks.values()], "docker",
                docker_image)  # fmt: skip
    check_hacks(out, hacks)
    assert not list(suite.rglob(".endstate-judge-*"))
    assert ours() <= before


# ----- the command ------------------------------------------------------------------------------


def test_vendor_without_write_shows_the_diff_and_changes_nothing(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    copy_tasks(suite)
    before = tree_digest(suite)
    result = vendor(str(suite))
    assert tree_digest(suite) == before
    assert not (suite / "endstate_vendor").exists()
    assert '-    {"name": "endstate_harness.graders:judged_tests"' in result.output
    assert '+    {"name": "endstate_vendor.graders:judged_tests"' in result.output
    assert "graders.py: new" in result.output
    assert "run again with --write" in result.output


def test_vendor_writes_once_and_then_has_nothing_to_do(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    tasks = copy_tasks(suite, ("recover-rate-limiters",))
    manifest = tasks[0] / "task.json"
    original = manifest.read_text()
    vendor(str(suite), "--write")
    changed = manifest.read_text()
    # only the names' strings changed: every other byte of task.json is kept
    assert changed == original.replace("endstate_harness.graders:", "endstate_vendor.graders:")
    written = (suite / VENDOR_FILE).read_text()
    assert written == render_module()
    header = read_header(written)
    assert header is not None and is_current(header) and header.version == __version__
    after = tree_digest(suite)
    result = vendor(str(suite), "--write")
    assert tree_digest(suite) == after
    assert "up to date" in result.output
    assert "nothing to change" in vendor(str(suite)).output


def test_vendor_renames_reference_graders_and_refuses_bad_input(tmp_path: Path) -> None:
    assert new_name("endstate_harness.graders:tests_pass") == "endstate_vendor.graders:tests_pass"
    assert new_name("endstate_harness.graders.judged_tests") == (
        "endstate_vendor.graders:judged_tests"
    )
    assert new_name("endstate_harness.graders:files_unchanged") == (
        "endstate.evals.graders:files_unchanged"
    )
    assert new_name("endstate.evals.graders:files_unchanged") is None
    assert new_name("mytasks.graders:tests_pass") is None
    runner = CliRunner()
    missing = runner.invoke(app, ["vendor", str(tmp_path / "nope")])
    assert missing.exit_code == 2 and "not a folder" in missing.output
    (tmp_path / "empty").mkdir()
    empty = runner.invoke(app, ["vendor", str(tmp_path / "empty")])
    assert empty.exit_code == 2 and "no task.json" in empty.output
    suite = tmp_path / "suite"
    copy_tasks(suite, ("fix-help-text-wrap",))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.symlink(elsewhere, suite / "endstate_vendor")
    linked = runner.invoke(app, ["vendor", str(suite), "--write"])
    assert linked.exit_code == 2 and "symbolic link" in linked.output
    assert not list(elsewhere.iterdir())


# ----- the vendored module ----------------------------------------------------------------------


def test_vendored_module_needs_only_the_standard_library_and_endstate() -> None:
    tree = ast.parse(render_module())
    tops = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            tops.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            tops.add(node.module.split(".")[0])
    assert tops - set(sys.stdlib_module_names) == {"endstate"}
    assert render_module().endswith(render_body())


def test_vendored_module_has_no_undefined_names(tmp_path: Path) -> None:
    target = tmp_path / "graders.py"
    target.write_text(render_module(), encoding="utf-8")
    ruff = Path(sys.executable).with_name("ruff")
    proc = subprocess.run(
        [str(ruff), "check", "--isolated", "--no-cache", "--select", "F821,F811,F401,E9",
         str(target)],
        capture_output=True, text=True,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout


def test_vendored_suite_lints_like_the_original(tmp_path: Path) -> None:
    original = tmp_path / "original"
    vendored = tmp_path / "vendored"
    for suite in (original, vendored):
        shutil.copytree(REPO / "tasks", suite, ignore=shutil.ignore_patterns("README.md"))
    vendor(str(vendored), "--write")

    def findings(suite: Path) -> list[tuple[str, str, str]]:
        result = lint_paths([suite], isolated=True)
        return sorted((d.code, d.file.relative_to(suite).as_posix(), d.message)
                      for d in result.diagnostics)  # fmt: skip

    assert findings(original) == findings(vendored) == []


def test_the_toolkit_proves_a_vendored_task(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    [task] = copy_tasks(suite, ("fix-help-text-wrap",))
    vendor(str(suite), "--write")
    proc = subprocess.run(
        [str(Path(sys.executable).with_name("endstate-author")), "prove", str(task),
         "--sandbox", "local", "--only", "directions", "--only", "holdout", "--no-cache"],
        capture_output=True, text=True, timeout=300,
        env={**os.environ, "ENDSTATE_AUTHOR_CACHE": str(tmp_path / "cache")},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "fixture fails" in proc.stdout and "solution passes" in proc.stdout
