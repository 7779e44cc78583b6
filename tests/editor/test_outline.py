"""The outline of task.json (document symbols) with exact byte ranges, no server."""

from __future__ import annotations

import pytest

from endstate_author.assist import Symbol, document_symbols

TEXT = (
    '{"id": "x", '
    '"graders": [{"name": "endstate.evals.graders:files_unchanged", "args": {"paths": ["a.py"]}}, '
    '{"name": "checks:shape"}, {"args": {}}], '
    '"requires": {"steps": {"max": 10}, "denied_calls": {"min": 1, "max": 2}, '
    '"total_tokens": {"min": 5}, "input_tokens": {}, "stop_reason": "end_turn"}, '
    '"budget": {"max_context_tokens": 1}}'
)


def at(needle: str, length: int | None = None) -> tuple[int, int]:
    """(start, end) of ``needle`` in TEXT, or of ``length`` bytes from its start."""
    start = TEXT.index(needle)
    return start, start + (len(needle) if length is None else length)


def member(key: str, value: str) -> tuple[int, int, int, int]:
    """A ``"key": value`` member: its whole range, then its key's."""
    start, end = at(f'"{key}": {value}')
    return start, end, start, start + len(key) + 2


def test_outline() -> None:
    graders_start = TEXT.index('"graders"')
    graders_end = TEXT.index("], ", graders_start) + 1
    first = at('{"name": "endstate')[0]
    first_end = TEXT.index("}}", first) + 2
    shape = at('{"name": "checks:shape"}')
    nameless = at('{"args": {}}')
    requires_start = TEXT.index('"requires"')
    requires_end = TEXT.index("}, ", TEXT.index('"stop_reason"')) + 1
    assert document_symbols(TEXT.encode()) == [
        Symbol("id", '"x"', "property", *member("id", '"x"')),
        Symbol(
            "graders",
            "3 graders",
            "array",
            graders_start,
            graders_end,
            graders_start,
            graders_start + len('"graders"'),
            [
                Symbol(
                    "files_unchanged",
                    "endstate.evals.graders:files_unchanged",
                    "function",
                    first,
                    first_end,
                    *at('"endstate.evals.graders:files_unchanged"'),
                    [Symbol("paths", '["a.py"]', "property", *member("paths", '["a.py"]'))],
                ),
                Symbol("shape", "checks:shape", "function", *shape, *at('"checks:shape"')),
                Symbol("[2]", "[2]", "function", *nameless, *nameless),
            ],
        ),
        Symbol(
            "requires",
            "",
            "object",
            requires_start,
            requires_end,
            requires_start,
            requires_start + len('"requires"'),
            [
                Symbol("steps", "<= 10", "number", *member("steps", '{"max": 10}')),
                Symbol(
                    "denied_calls",
                    "1..2",
                    "number",
                    *member("denied_calls", '{"min": 1, "max": 2}'),
                ),
                Symbol("total_tokens", ">= 5", "number", *member("total_tokens", '{"min": 5}')),
                Symbol("input_tokens", "any value", "number", *member("input_tokens", "{}")),
                Symbol("stop_reason", '"end_turn"', "string", *member("stop_reason", '"end_turn"')),
            ],
        ),
        Symbol(
            "budget",
            '{"max_context_tokens": 1}',
            "object",
            *member("budget", '{"max_context_tokens": 1}'),
        ),
    ]


def test_a_long_value_is_cut() -> None:
    value = "x" * 100
    [sym] = document_symbols(f'{{"description": "{value}"}}'.encode())
    assert sym.detail == '"' + "x" * 58 + "…"
    assert len(sym.detail) == 60


def test_half_typed_document_still_has_an_outline() -> None:
    symbols = document_symbols(b'{"id": "x", "graders": [{"name": "a:b"}, {}]')  # no closing }
    assert [s.name for s in symbols] == ["id", "graders"]
    assert [c.name for c in symbols[1].children] == ["b", "[1]"]


@pytest.mark.parametrize("data", [b"", b"[]", b"42", b"\xff", b"{" * 10, b" " * (1 << 20) + b"{}"])
def test_no_outline(data: bytes) -> None:
    assert document_symbols(data) == []
