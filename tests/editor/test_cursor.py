"""The JSON path at a byte offset, read lexically from half-typed task.json."""

from __future__ import annotations

import pytest

from endstate_author.assist.cursor import arg_of, cursor_context, utf16_column
from tests.editor.conftest import at

CASES = [
    # (buffer with | at the cursor, kind, path, token range, prefix, in a string)
    ('{"id": "x", "category": "bu|', "value", ("category",), (24, 27), "bu", True),
    (
        '{"graders": [{"name": "a", "args": {"paths": ["te|',
        "value",
        ("graders", 0, "args", "paths", 0),
        (46, 49),
        "te",
        True,
    ),
    ('{"id": "x" |', "key", (), (11, 11), "", False),
    ('{"category" |', "none", (), (12, 12), "", False),
    ("[1, |", "value", (1,), (4, 4), "", False),
    (
        '{"budget": {"max_context_tokens": 12|, "x": 1}}',
        "value",
        ("budget", "max_context_tokens"),
        (34, 36),
        "12",
        False,
    ),
    ("|{}", "value", (), (0, 0), "", False),
    ('{"a": tr|', "value", ("a",), (6, 8), "tr", False),
    (
        '{"graders": [{"args": {"|"}, "name": "checks:shape"}]}',
        "key",
        ("graders", 0, "args"),
        (23, 25),
        "",
        True,
    ),
]


@pytest.mark.parametrize(("text", "kind", "path", "token", "prefix", "in_string"), CASES)
def test_cursor_context(
    text: str,
    kind: str,
    path: tuple[str | int, ...],
    token: tuple[int, int],
    prefix: str,
    in_string: bool,
) -> None:
    data, offset = at(text)
    ctx = cursor_context(data, offset)
    assert (ctx.kind, ctx.path, (ctx.token_start, ctx.token_end)) == (kind, path, token)
    assert (ctx.prefix, ctx.in_string) == (prefix, in_string)


def test_members_after_the_cursor_are_seen() -> None:
    """The grader's name written after its args still names the grader being completed."""
    data, offset = at('{"graders": [{"args": {"|"}, "name": "checks:shape"}]}')
    ctx = cursor_context(data, offset)
    assert ctx.object_scalars(("graders", 0)) == {"name": "checks:shape"}
    assert ctx.present_keys == []


def test_present_keys_and_comma() -> None:
    data, offset = at('{"id": "x" |')
    ctx = cursor_context(data, offset)
    assert ctx.present_keys == ["id"]
    assert ctx.needs_comma


@pytest.mark.parametrize(
    ("text", "kind", "path", "token", "word"),
    [
        ('{"max_steps": 2|0}', "value", ("max_steps",), (14, 16), "20"),
        ('{"max_|steps": 20}', "key", (), (1, 12), "max_steps"),
    ],
)
def test_hover_reads_the_token_under_the_cursor(
    text: str, kind: str, path: tuple[str | int, ...], token: tuple[int, int], word: str
) -> None:
    data, offset = at(text)
    ctx = cursor_context(data, offset, hover=True)
    assert (ctx.kind, ctx.path, (ctx.token_start, ctx.token_end), ctx.text) == (
        kind,
        path,
        token,
        word,
    )


@pytest.mark.parametrize(
    ("path", "arg"),
    [
        (("graders", 0, "args", "paths"), "paths"),
        (("graders", 2, "args", "paths", 1), "paths"),
        (("graders", 0, "args"), None),
        (("graders", 0, "name"), None),
        (("graders", 0, "args", "paths", 1, 2), None),
    ],
)
def test_arg_of(path: tuple[str | int, ...], arg: str | None) -> None:
    assert arg_of(path) == arg


@pytest.mark.parametrize(
    ("line", "column", "units"), [("abc", 2, 2), ("é→x", 3, 3), ("😀x", 1, 2), ("😀x", 2, 3)]
)
def test_utf16_column(line: str, column: int, units: int) -> None:
    assert utf16_column(line, column) == units
