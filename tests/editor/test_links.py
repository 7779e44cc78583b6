"""Go-to-definition and document links from task.json, with no server."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from endstate_author.assist import DocumentLink, Graders, Location, definition, document_links
from endstate_harness import graders as harness_graders
from tests.editor.conftest import at, span


def test_suite_grader_name_goes_to_its_def(root: Path, graders: Graders) -> None:
    data, offset = at('{"graders": [{"name": "checks:sh|ape"}]}')
    assert definition(root, data, offset, graders=graders) == Location(
        root.parent / "checks.py", 1, 1
    )


def test_library_grader_name_goes_to_the_harness(root: Path, graders: Graders) -> None:
    data, offset = at('{"graders": [{"name": "endstate.evals.graders:files_unch|anged"}]}')
    target = definition(root, data, offset, graders=graders)
    func = harness_graders.files_unchanged
    assert target == Location(
        Path(inspect.getsourcefile(func) or ""), inspect.getsourcelines(func)[1], 1
    )


@pytest.mark.parametrize(
    ("text", "target"),
    [
        ('{"graders": [{"name": "x", "args": {"paths": ["src/a|pp.py"]}}]}', "fixture/src/app.py"),
        (
            '{"graders": [{"name": "x", "args": {"path": "src/ex|tra.py"}}]}',
            "solution/src/extra.py",
        ),
        (
            '{"graders": [{"name": "x", "args": {"path": "tests/test_m|ore.py"}}]}',
            "holdout/tests/test_more.py",
        ),
        ('{"graders": [{"name": "x", "args": {"start_dir": "sr|c"}}]}', "fixture/src"),
    ],
)
def test_path_argument_goes_to_the_file(
    root: Path, graders: Graders, text: str, target: str
) -> None:
    """The fixture first, then the solution, then the holdout."""
    data, offset = at(text)
    assert definition(root, data, offset, graders=graders) == Location(root / target)


@pytest.mark.parametrize(
    "text",
    [
        '{"graders": [{"name": "x", "args": {"path": "../t|1/task.json"}}]}',  # outside
        '{"graders": [{"name": "x", "args": {"allowed": ["src/|*"]}}]}',  # a pattern
        '{"graders": [{"name": "x", "args": {"label": "src/a|pp.py"}}]}',  # not a path argument
        '{"graders": [{"name": "x", "args": {"path": "miss|ing.py"}}]}',  # no such file
        '{"graders": [{"name": "nope:|x"}]}',  # no such grader
        '{"max_st|eps": 20}',  # a key
    ],
)
def test_no_definition(root: Path, graders: Graders, text: str) -> None:
    data, offset = at(text)
    assert definition(root, data, offset, graders=graders) is None


def test_document_links(root: Path) -> None:
    text = (
        '{"graders": [{"name": "x", "args": {"paths": ["src/app.py", "missing.py", "src", '
        '"tests/test_more.py"], "path": "src/extra.py", "label": "src/app.py"}}, '
        '{"name": "y", "args": {"allowed": ["src/*"]}}]}'
    )

    def inside(needle: str) -> tuple[int, int]:
        start, end = span(text, f'"{needle}"')
        return start + 1, end - 1

    assert document_links(root, text.encode()) == [
        DocumentLink(*inside("src/app.py"), root / "fixture/src/app.py", "open fixture/src/app.py"),
        DocumentLink(
            *inside("tests/test_more.py"),
            root / "holdout/tests/test_more.py",
            "open holdout/tests/test_more.py",
        ),
        DocumentLink(
            *inside("src/extra.py"), root / "solution/src/extra.py", "open solution/src/extra.py"
        ),
    ]


@pytest.mark.parametrize("data", [b"", b"{", b'{"graders": {}}', b"\xff\xfe", b"[1, 2]"])
def test_no_links_in_odd_documents(root: Path, data: bytes) -> None:
    assert document_links(root, data) == []
