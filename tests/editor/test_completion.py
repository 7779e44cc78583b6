"""Completion proposals, from a buffer and a byte offset, with no server.

Each case is the buffer an author has (``|`` is the cursor, most of them invalid JSON) and
the exact proposals: labels, inserted snippet and the byte range it replaces.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from endstate_author.assist import CompletionItem, Graders, complete
from tests.editor.conftest import SHAPE_SIGNATURE, at, span

TOP_KEYS = [
    "$schema",
    "id",
    "category",
    "description",
    "prompt",
    "max_steps",
    "timeout_s",
    "budget",
    "graders",
    "requires",
    "recovery",
]
CATEGORIES = ["bug-fix", "feature", "refactor", "compaction", "permissioning", "recovery", "cost"]
STOP_REASONS = ["end_turn", "tool_use", "max_tokens", "budget_exceeded", "max_steps", "error"]
FIXTURE_FILES = ["src/__init__.py", "src/app.py", "tests/__init__.py", "tests/test_app.py"]


def propose(root: Path, graders: Graders, text: str) -> list[CompletionItem]:
    data, offset = at(text)
    return complete(root, data, offset, graders=graders)


def labels(items: list[CompletionItem]) -> list[str]:
    return [i.label for i in items]


def by_label(items: list[CompletionItem]) -> dict[str, CompletionItem]:
    return {i.label: i for i in items}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"id": "x",\n  "re|', [k for k in TOP_KEYS if k != "id"]),
        ('{"id": "x", "graders": [], "|', [k for k in TOP_KEYS if k not in ("id", "graders")]),
        ('{"budget": {"|', ["max_context_tokens", "reserve_output_tokens"]),
        ('{"budget": {"|\n, "graders": [}', ["max_context_tokens", "reserve_output_tokens"]),
        ('{"graders": [{"|', ["name", "args"]),
        ('{"recovery": {"crash_at_call": 1, "|', ["after_side_effect"]),
        ('{"requires": {"steps": {"max": 3, "|', ["min"]),
    ],
)
def test_keys_not_yet_present(root: Path, graders: Graders, text: str, expected: list[str]) -> None:
    items = propose(root, graders, text)
    assert labels(items) == expected
    assert all(i.kind == "property" for i in items)


def test_key_item_replaces_the_half_typed_key(root: Path, graders: Graders) -> None:
    text = '{"id": "x",\n  "re|'
    item = by_label(propose(root, graders, text))["requires"]
    assert item == CompletionItem(
        label="requires",
        insert='"requires": {${1}}',
        start=span(text, '"re')[0],
        end=span(text, '"re')[1],
        kind="property",
        detail="Requires",
        documentation="Run counters the runner checks.",
        filter_text='"requires"',
    )


def test_key_after_a_value_brings_its_comma(root: Path, graders: Graders) -> None:
    text = '{"id": "x" |'
    item = by_label(propose(root, graders, text))["max_steps"]
    assert (item.insert, item.start, item.end, item.filter_text) == (
        ', "max_steps": ${1:25}',
        11,
        11,
        "max_steps",
    )


def test_category_values(root: Path, graders: Graders) -> None:
    text = '{"id": "x", "category": "bu|'
    items = propose(root, graders, text)
    assert labels(items) == CATEGORIES
    start, end = span(text, '"bu')
    assert [(i.insert, i.start, i.end, i.kind) for i in items] == [
        (f'"{c}"', start, end, "enum") for c in CATEGORIES
    ]
    assert items[0].documentation == (
        "the fixture has a bug and a failing test; the agent fixes the code"
    )


def test_stop_reasons(root: Path, graders: Graders) -> None:
    items = propose(root, graders, '{"requires": {"stop_reason": "|')
    assert labels(items) == STOP_REASONS
    assert [(i.start, i.end) for i in items] == [(29, 30)] * len(STOP_REASONS)
    assert by_label(items)["max_tokens"].documentation == "the model hit its output limit"


def test_counter_bounds(root: Path, graders: Graders) -> None:
    items = propose(root, graders, '{"requires": {"steps": |')
    doc = "Bound on agent loop steps, i.e. model calls"
    assert items == [
        CompletionItem("{min}", '{"min": ${1:1}}', 23, 23, "snippet", "bound", doc),
        CompletionItem("{max}", '{"max": ${1:1}}', 23, 23, "snippet", "bound", doc),
        CompletionItem(
            "{min, max}", '{"min": ${1:1}, "max": ${2:1}}', 23, 23, "snippet", "bound", doc
        ),
    ]


def test_grader_name_brings_a_snippet_of_its_required_args(root: Path, graders: Graders) -> None:
    text = '{"graders": [{"name": "", "args": {}}, {"name": "checks:sh|"}]}'
    items = by_label(propose(root, graders, text))
    start, end = span(text, '"checks:sh"')
    assert items["checks:shape"] == CompletionItem(
        label="checks:shape",
        insert='"checks:shape", "args": {"paths": ["${1}"], "limit": ${2:0}, '
        '"exact": ${3|true,false|}, "label": "${4}"}',
        start=start,
        end=end,
        kind="function",
        detail=SHAPE_SIGNATURE,
        documentation="Check the shape.",
        filter_text='"checks:shape"',
        sort_text="1checks:shape",
    )
    unchanged = items["endstate.evals.graders:files_unchanged"]
    assert unchanged.insert == (
        '"endstate.evals.graders:files_unchanged", "args": {"paths": ["${1}"]}'
    )
    assert unchanged.sort_text == "0endstate.evals.graders:files_unchanged"  # the library first
    assert items["endstate.evals.graders:no_new_skips"].insert == (
        '"endstate.evals.graders:no_new_skips"'  # nothing required: no args
    )
    assert "checks:helper" not in items  # not a grader: its first parameter is not sandbox


def test_grader_name_when_args_follow_adds_no_second_args(root: Path, graders: Graders) -> None:
    text = '{"graders": [{"name": "checks:sh|", "args": {}}]}'
    item = by_label(propose(root, graders, text))["checks:shape"]
    assert (item.insert, item.start, item.end) == ('"checks:shape"', 22, 33)


def test_a_new_grader_entry_is_a_whole_object(root: Path, graders: Graders) -> None:
    items = by_label(propose(root, graders, '{"graders": [\n  |'))
    assert items["checks:shape"] == CompletionItem(
        label="checks:shape",
        insert='{"name": "checks:shape", "args": {"paths": ["${1}"], "limit": ${2:0}, '
        '"exact": ${3|true,false|}, "label": "${4}"}}',
        start=16,
        end=16,
        kind="snippet",
        detail=SHAPE_SIGNATURE,
        documentation="Check the shape.",
    )


def test_argument_names_of_the_grader_in_context(root: Path, graders: Graders) -> None:
    """The grader's name is written after its args: still the grader being completed."""
    text = '{"graders": [{"args": {"paths": [], "|"}, "name": "checks:shape"}]}'
    items = propose(root, graders, text)
    assert labels(items) == ["limit", "exact", "label", "note"]  # paths is already there
    start, end = span(text, '""')
    assert {(i.start, i.end, i.kind, i.documentation) for i in items} == {
        (start, end, "property", SHAPE_SIGNATURE)
    }
    got = by_label(items)
    assert (got["limit"].insert, got["limit"].detail) == ('"limit": ${1:0}', "int (required)")
    assert (got["label"].insert, got["label"].detail) == ('"label": "${1}"', "str (required)")
    assert (got["note"].insert, got["note"].detail) == (
        '"note": "${1}"',
        "str (optional, default 'x')",
    )
    assert got["exact"].detail == "bool (required)"


def test_argument_names_of_a_library_grader(root: Path, graders: Graders) -> None:
    text = '{"graders": [{"name": "endstate.evals.graders:file_matches", "args": {"|'
    items = propose(root, graders, text)
    assert [(i.label, i.insert) for i in items] == [
        ("path", '"path": "${1}"'),
        ("pattern", '"pattern": "${1}"'),
        ("should_match", '"should_match": ${1|true,false|}'),
        ("name", '"name": "${1}"'),
    ]


@pytest.mark.parametrize(
    ("text", "typed", "expected"),
    [
        (
            '{"graders": [{"name": "checks:shape", "args": {"paths": ["te|',
            '"te',
            [(f, "file") for f in FIXTURE_FILES],
        ),
        (
            '{"graders": [{"name": "endstate.evals.graders:changed_paths_within", '
            '"args": {"allowed": ["|',
            '"',
            [(f, "file") for f in FIXTURE_FILES] + [("src/*", "folder"), ("tests/*", "folder")],
        ),
        (
            '{"graders": [{"name": "endstate_harness.graders:tests_pass", "args": {"start_dir": "|',
            '"',
            [(".", "folder"), ("src", "folder"), ("tests", "folder")],
        ),
        (
            '{"graders": [{"name": "endstate.evals.graders:file_contains", "args": {"path": |',
            "",
            [(f, "file") for f in FIXTURE_FILES],
        ),
    ],
)
def test_fixture_paths(
    root: Path, graders: Graders, text: str, typed: str, expected: list[tuple[str, str]]
) -> None:
    """Paths come from the fixture (``__pycache__`` pruned), never from solution/holdout;
    each replaces what is typed of the string (its quote included)."""
    items = propose(root, graders, text)
    assert [(i.label, i.kind) for i in items] == expected
    _data, offset = at(text)
    assert {(i.insert, i.start, i.end) for i in items} == {
        (f'"{label}"', offset - len(typed), offset) for label, _ in expected
    }


@pytest.mark.parametrize(
    "text",
    [
        '{"category" |',  # between a key and its colon
        '{"graders": [{"name": "nope:x", "args": {"|',  # arguments of an unknown grader
        '{"graders": [{"name": "checks:shape", "args": {"label": "|',  # a free-text value
        '{"unknown": {"|',  # keys of an object the format does not define
    ],
)
def test_nothing_to_propose(root: Path, graders: Graders, text: str) -> None:
    assert propose(root, graders, text) == []


def test_a_huge_buffer_gets_nothing(root: Path, graders: Graders) -> None:
    data = b'{"category": "' + b" " * (1 << 20)
    assert complete(root, data, 14, graders=graders) == []
