"""The witness's evidence as prove reads it: the tests each grader of a grading reported, the
holdout's test modules, and where a reported test is defined in the task folder."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from endstate_author.engine.discovery import builtin_name, grader_command, is_test_file_name
from endstate_author.prove.grading import Graded
from endstate_harness.graders import pyast, reads_sealed_state_only
from endstate_harness.graders.judge.evidence import test_modules
from endstate_harness.task import PRUNED_NAMES, Task
from endstate_harness.verdict import TestRecord

PASSING = frozenset({"passed", "expected_failure"})
NOT_PASSING = frozenset({"failed", "error", "unexpected_success"})


def records(graded: Graded) -> Iterator[tuple[int, TestRecord]]:
    """(grader index, test) for every test a grader of the grading reported."""
    for index, verdict in enumerate(graded.per_grader):
        if verdict.evidence is not None:
            for test in verdict.evidence.tests:
                yield index, test


def witnessed(graded: Graded) -> list[int]:
    """The graders of the grading that reported per-test evidence."""
    return [i for i, v in enumerate(graded.per_grader) if v.evidence is not None]


def tests_json(graded: Graded) -> list[dict[str, Any]] | None:
    """The evidence as a check keeps it (None when no grader reported any)."""
    if not witnessed(graded):
        return None
    return [{"grader": i, **test.model_dump()} for i, test in records(graded)]


def opaque(task: Task, graded: Graded) -> list[int]:
    """Graders that may run tests but report no per-test evidence (``command_succeeds``,
    ``tests_pass``, a suite's own grader): their verdict is all that can be read."""
    return [
        i
        for i, verdict in enumerate(graded.per_grader)
        if verdict.evidence is None and not reads_sealed_state_only(task.graders[i])
    ]


def _python_files(root: Path | None) -> Iterator[tuple[str, Path]]:
    if root is None or not root.is_dir():
        return
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        if any(part in PRUNED_NAMES for part in rel.parts):
            continue
        if path.is_file() and not path.is_symlink():
            yield rel.as_posix(), path


def holdout_test_modules(task: Task) -> list[str]:
    """The holdout's test modules: its Python files that define tests, and those named as a
    test's (``test*.py``, ``*_test.py``) whatever they define, but those another holdout file
    imports (a base class's module; helpers and data are not tests at all).

    Why the names too: a file the runner loads by its name whose tests are nothing the runner
    collects (a class of ``test_`` methods not derived from ``TestCase``) defines no test by
    its shape, yet an author reads it as tests; staged with its sentinel, the judge's
    evidence shows it contributes none (ES903)."""
    files: dict[str, bytes] = {}
    for rel, path in _python_files(task.holdout):
        try:
            files[rel] = path.read_bytes()
        except OSError:
            continue
    # a file named as a test's counts as one: a TestCase class is appended to its text for
    # this reading only, so the judge's own rule (a module another one imports is not a test
    # module) decides the rest, with every file's real imports
    marked = {rel: data + _MARK if is_test_file_name(rel) else data
              for rel, data in files.items()}
    return test_modules(marked)


_MARK = b"\n\n\nclass _EndstateNamedAsATest(TestCase):\n    pass\n"


def short_name(test_id: str) -> str:
    """``Class.test_x`` (and a subtest's parameters) of a dotted test id."""
    base, _, params = test_id.partition(" ")
    parts = base.rsplit(".", 2)
    name = ".".join(parts[-2:]) if len(parts) >= 2 else base
    params = " ".join(params.split())
    if len(params) > 60:
        params = params[: params.rfind(" ", 0, 58) if " " in params[:58] else 58] + " …]"
    return f"{name} {params}" if params else name


def listed(items: list[str], limit: int = 8, sep: str = ", ") -> str:
    """Up to ``limit`` items, joined, with how many were left out."""
    shown = sep.join(items[:limit])
    more = len(items) - limit
    return f"{shown} and {more} more" if more > 0 else shown


@dataclass(frozen=True)
class TestSite:
    """Where a test is defined: its file in the task folder and its ``def`` line."""

    __test__ = False  # not a test class, whatever its name says

    path: str
    line: int | None


def test_site(task: Task, test: TestRecord) -> TestSite | None:
    """The task file a reported test comes from (holdout/ or fixture/) and its def line."""
    if not test.file:
        return None
    folder = "holdout" if test.source == "holdout" else "fixture"
    path = task.root / folder / test.file
    method = test.id.partition(" ")[0].rsplit(".", 1)[-1]
    try:
        tree = pyast.parse(path.read_bytes())
    except (OSError, SyntaxError, ValueError):
        return TestSite(f"{folder}/{test.file}", None)
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == method:
            return TestSite(f"{folder}/{test.file}", node.lineno)
    return TestSite(f"{folder}/{test.file}", None)


def runs_tests(task: Task) -> list[int]:
    """Indexes of the graders that run a test command this toolkit can read exactly."""
    out = []
    for i, spec in enumerate(task.graders):
        command = grader_command(spec.name, spec.args or {})
        if command is not None and command.known:
            out.append(i)
    return out


def is_judge(task: Task, index: int) -> bool:
    return builtin_name(task.graders[index].name) == "judged_tests"
