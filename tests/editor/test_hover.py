"""Hover texts, from a buffer and a byte offset (the character under the cursor), no server."""

from __future__ import annotations

from pathlib import Path

import pytest

from endstate_author.assist import Graders, HoverInfo, hover
from tests.editor.conftest import SHAPE_SIGNATURE, at, span

CASES = [
    # (buffer with | before the character hovered, markdown, the token it is about)
    (
        '{"max_st|eps": 20}',
        "**max_steps** (`int`): Agent loop steps (model calls) before the run stops.",
        '"max_steps"',
    ),
    (
        '{"budget": {"max_con|text_tokens": 1}}',
        "**max_context_tokens** (`int`): Context window the loop may fill, in estimated tokens.",
        '"max_context_tokens"',
    ),
    (
        '{"graders": [{"name": "checks:sh|ape"}]}',
        f"```python\n{SHAPE_SIGNATURE}\n```\n\n`checks:shape`\n\nCheck the shape.",
        '"checks:shape"',
    ),
    (
        '{"graders": [{"name": "nope:|x"}]}',
        "`nope:x`: no such grader was found (ES202)",
        '"nope:x"',
    ),
    (
        '{"graders": [{"name": "checks:shape", "args": {"lim|it": 1}}]}',
        "**limit**: `int` (required)\n\nargument of `checks:shape`",
        '"limit"',
    ),
    (
        '{"graders": [{"args": {"no|te": "n"}, "name": "checks:shape"}]}',
        "**note**: `str` (default `'x'`)\n\nargument of `checks:shape`",
        '"note"',
    ),
    (
        '{"requires": {"st|eps": {"max": 1}}}',
        "**steps**: a bound `{min?, max?}` (inclusive) on agent loop steps, i.e. model calls.\n\n"
        "The runner checks it after the run and conjoins it with the graders.",
        '"steps"',
    ),
    (
        '{"category": "bug|-fix"}',
        "**bug-fix**: the fixture has a bug and a failing test; the agent fixes the code",
        '"bug-fix"',
    ),
    (
        '{"requires": {"stop_reason": "end|_turn"}}',
        "**end_turn**: the model ended its turn with a final message",
        '"end_turn"',
    ),
]


@pytest.mark.parametrize(("text", "markdown", "token"), CASES)
def test_hover(root: Path, graders: Graders, text: str, markdown: str, token: str) -> None:
    data, offset = at(text)
    start, end = span(text, token)
    assert hover(root, data, offset, graders=graders) == HoverInfo(markdown, start, end)


def test_category_key_lists_the_categories(root: Path, graders: Graders) -> None:
    data, offset = at('{"categ|ory": "x"}')
    info = hover(root, data, offset, graders=graders)
    assert info is not None and (info.start, info.end) == (1, 11)
    head, *bullets = info.markdown.split("\n\n", 1)[1].split("\n")
    assert info.markdown.startswith(
        "**category** (`Literal`): What the task measures; a typo is an error, not a filter."
    )
    assert [b.split("`")[1] for b in [head, *bullets]] == [
        "bug-fix",
        "feature",
        "refactor",
        "compaction",
        "permissioning",
        "recovery",
        "cost",
    ]


@pytest.mark.parametrize(
    "text",
    [
        '{"graders": [{"name": "checks:shape", "args": {"oth|er": 1}}]}',  # not an argument
        '{"category": "bu|"',  # not a category
        '|{"a": 1}',  # punctuation
        '{"max_steps": 2|0}',  # a number
        '{"unkn|own": 1}',  # a key the format does not define
        '{"graders": [{"name": "nope:x", "args": {"pa|th": 1}}]}',  # argument of an unknown grader
    ],
)
def test_no_hover(root: Path, graders: Graders, text: str) -> None:
    data, offset = at(text)
    assert hover(root, data, offset, graders=graders) is None
