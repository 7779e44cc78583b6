"""CONTRIBUTING.md's grader recipe, followed literally in a copy of the repository.

The recipe's steps are read from CONTRIBUTING.md itself: the files each step names and the
code it shows (the grader, its record, its test) are written into a copy of the three
packages with a toy name, the CHANGELOG gets its line, and nothing else is touched. Then the
copy must know the toy grader everywhere a built-in grader is known: its own test and the
record tests pass, the resolver resolves it, lint checks a task's arguments against it (ES208)
and its path (ES506), the docs page lists it, the architecture test holds. A recipe that
names the wrong file, forgets one, or shows code that does not work fails here.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
COPIED = ("endstate_author", "lsp", "harness", "tests", "scripts")
COPIED_FILES = ("CONTRIBUTING.md", "CHANGELOG.md", "pyproject.toml")
NAME, MODULE = "toy_nonempty", "toy_checks"
HEADING = re.compile(r"^## Adding a grader — (\d+) files\n", re.M)
STEP = re.compile(r"^(\d+)\. (.*?)(?=^\d+\. |\Z)", re.M | re.S)
PATH = re.compile(r"`([\w./<>-]+\.(?:py|md))`")
CODE = re.compile(r"^( *)```python\n(.*?)^\1```", re.M | re.S)
TASK = "add-temperature-units"


def _fill(text: str) -> str:
    return text.replace("<name>", NAME).replace("<module>", MODULE)


def recipe() -> tuple[int, list[tuple[str, list[str]]]]:
    """(the file count the heading promises, [(the file a step names, its code blocks)])."""
    text = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    heading = HEADING.search(text)
    assert heading, "CONTRIBUTING.md has no '## Adding a grader — N files' section"
    section = text[heading.end(): text.index("\n## ", heading.end())]
    steps = []
    for match in STEP.finditer(section):
        named = PATH.search(match[2])
        assert named, f"step {match[1]} of the grader recipe names no file"
        blocks = [textwrap.dedent(code) for _indent, code in CODE.findall(match[2])]
        steps.append((_fill(named[1]), [_fill(b) for b in blocks]))
    return int(heading[1]), steps


def _snapshot(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and "__pycache__" not in p.parts}


def _append_record(names_py: Path, record: str) -> None:
    """The record appended to ``GRADERS``: written before the tuple's closing parenthesis."""
    source = names_py.read_text(encoding="utf-8")
    tree = ast.parse(source)
    value = next((node.value for node in tree.body
                 if isinstance(node, ast.AnnAssign | ast.Assign) and node.value is not None
                 and "GRADERS" in ast.unparse(node.targets[0] if isinstance(node, ast.Assign)
                                              else node.target).split()), None)
    assert isinstance(value, ast.Tuple) and value.end_lineno is not None, (
        f"{names_py} has no tuple GRADERS to append the record to")
    lines = source.splitlines(keepends=True)
    closing = value.end_lineno - 1
    assert lines[closing].strip() == ")", "GRADERS does not end with a line of its own"
    lines.insert(closing, textwrap.indent(record.rstrip("\n") + "\n", "    "))
    names_py.write_text("".join(lines), encoding="utf-8")


def _changelog_line(changelog: Path) -> None:
    text = changelog.read_text(encoding="utf-8")
    head = "## [Unreleased]\n"
    assert head in text
    line = f"\n### Added\n- The grader `endstate_harness.graders:{NAME}`.\n"
    changelog.write_text(text.replace(head, head + line, 1), encoding="utf-8")


def follow(copy: Path) -> set[str]:
    """Do what the recipe says in ``copy``; the files written."""
    count, steps = recipe()
    assert len(steps) == count <= 4, (count, [path for path, _ in steps])
    written: set[str] = set()
    for path, blocks in steps:
        target = copy / path
        if path == "CHANGELOG.md":
            _changelog_line(target)
        elif path.endswith("graders/names.py"):
            assert len(blocks) == 1, "the record step shows one record"
            _append_record(target, blocks[0])
        else:
            assert not target.exists(), f"{path} exists already"
            assert len(blocks) == 1, f"the step that writes {path} shows its code"
            target.write_text(blocks[0], encoding="utf-8")
        written.add(path)
    return written


def _run(copy: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        str(copy / p) for p in ("", "harness", "lsp"))}
    return subprocess.run([sys.executable, *argv], cwd=copy, env=env, capture_output=True,
                          text=True, timeout=600)


def _lint(copy: Path, task: Path, path: object) -> list[dict[str, object]]:
    manifest = json.loads((task / "task.json").read_text())
    manifest["graders"].append({"name": f"endstate_harness.graders:{NAME}",
                                "args": {"path": path}})
    (task / "task.json").write_text(json.dumps(manifest, indent=2))
    done = _run(copy, "-m", "endstate_author", "lint", str(task), "--isolated", "--no-cache",
                "-o", "json", "--exit-zero")
    assert done.returncode == 0, done.stderr
    found: list[dict[str, object]] = json.loads(done.stdout)
    return found


@pytest.mark.slow
def test_the_grader_recipe_is_exact(tmp_path: Path) -> None:
    copy = tmp_path / "repo"
    for folder in COPIED:
        shutil.copytree(ROOT / folder, copy / folder,
                        ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    for name in COPIED_FILES:
        shutil.copy2(ROOT / name, copy / name)
    before = _snapshot(copy)
    written = follow(copy)
    after = _snapshot(copy)
    changed = {p for p in after if before.get(p) != after[p]}
    assert changed == written, "the recipe touched other files than it names"

    where = _run(copy, "-c", "import endstate_harness, endstate_author; "
                 "print(endstate_harness.__file__, endstate_author.__file__)")
    assert where.stdout.split() and all(
        Path(f).is_relative_to(copy) for f in where.stdout.split()), where.stdout + where.stderr

    test_file = next(p for p in written if p.startswith("tests/"))
    done = _run(copy, "-m", "pytest", "-q", "-p", "no:cacheprovider", test_file,
                "tests/harness/test_grader_records.py", "tests/rules/test_builtin_signatures.py",
                "tests/test_discovery.py", "tests/test_architecture.py")
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert NAME in done.stdout or "passed" in done.stdout

    resolved = _run(copy, "-c", textwrap.dedent(f"""
        from endstate_harness.graders import resolve, reads_sealed_state_only, {NAME}
        from endstate_harness.task import GraderSpec
        spec = GraderSpec(name="endstate_harness.graders:{NAME}", args={{"path": "a"}})
        print(resolve(spec).__name__, reads_sealed_state_only(spec), {NAME}.__module__)
        """))
    assert resolved.stdout.split() == [NAME, "True", f"endstate_harness.graders.{MODULE}"], (
        resolved.stdout + resolved.stderr)

    task = tmp_path / TASK
    shutil.copytree(ROOT / "tasks" / TASK, task)
    assert _lint(copy, task, "units/convert.py") == []
    shutil.rmtree(task)
    shutil.copytree(ROOT / "tasks" / TASK, task)
    assert {d["code"] for d in _lint(copy, task, "units/nope.py")} >= {"ES506"}
    shutil.rmtree(task)
    shutil.copytree(ROOT / "tasks" / TASK, task)
    assert {d["code"] for d in _lint(copy, task, 3)} == {"ES208"}

    docs = _run(copy, "scripts/grader_docs.py")
    assert f"### `{NAME}`" in docs.stdout and "(ES506)" in docs.stdout.split(f"`{NAME}`")[-1]


def test_the_recipe_reads_as_its_heading_says() -> None:
    """The parse the slow test relies on: four steps, each naming its file, with the code."""
    count, steps = recipe()
    assert count == len(steps) <= 4
    paths = [path for path, _ in steps]
    assert paths == [f"harness/endstate_harness/graders/{MODULE}.py",
                     "harness/endstate_harness/graders/names.py",
                     f"tests/harness/test_{NAME}.py", "CHANGELOG.md"]
    assert [len(blocks) for _, blocks in steps] == [1, 1, 1, 0]
