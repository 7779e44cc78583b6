"""The two tree builders of jsonpos agree: the direct scanner used for valid JSON gives the
same nodes and byte ranges as tree-sitter, which stays the path for invalid text."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from endstate_author.engine.jsonpos import JNode, _build_root, _parser, parse

ROOT = Path(__file__).resolve().parent.parent


def dump(node: JNode | None) -> Any:
    if node is None:
        return None
    return (
        node.kind, node.start, node.end,
        repr(node.value) if node.kind not in ("object", "array") else None,
        [(p.key, dump(p.key_node), dump(p.value), p.start, p.end) for p in node.pairs],
        [dump(item) for item in node.items],
    )


def same_as_tree_sitter(data: bytes) -> None:
    document = parse(data)
    assert document.error is None
    tree = _parser().parse(data)
    if tree.root_node.has_error:
        # tree-sitter-json rejects some valid JSON (an exponent with "+", as in 1e+16); there
        # the scanner is the one that is right, and nothing is compared
        return
    assert dump(document.root) == dump(_build_root(tree.root_node, data, 0))


def test_shipped_manifests() -> None:
    files = sorted(ROOT.glob("tasks/*/task.json")) + sorted(ROOT.glob("tasks/*/oracle.json"))
    assert files
    for path in files:
        same_as_tree_sitter(path.read_bytes())


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                   max_size=4),
    max_leaves=20,
)


@settings(max_examples=150, deadline=None)
@given(json_values, st.sampled_from([None, 0, 2]), st.booleans())
def test_generated_documents(value: Any, indent: int | None, ascii_only: bool) -> None:
    same_as_tree_sitter(json.dumps(value, indent=indent, ensure_ascii=ascii_only).encode())


def test_invalid_text_still_gets_a_tolerant_tree() -> None:
    document = parse(b'{"graders": [{"name": "x", "args": {"pa')
    assert document.error is not None and document.root is not None


def _from_depth(frames: int, call: Any) -> Any:
    """``call()`` made with ``frames`` more frames of the caller's own on the stack."""
    return call() if frames == 0 else _from_depth(frames - 1, call)


@given(st.recursive(st.none() | st.integers() | st.text(max_size=3),
                    lambda inner: st.lists(inner, max_size=3)
                    | st.dictionaries(st.text(max_size=3), inner, max_size=3)))  # fmt: skip
@settings(max_examples=200, deadline=None)
def test_to_python_is_what_json_loads_gives(value: Any) -> None:
    text = json.dumps(value)
    document = parse(text.encode())
    assert document.root is not None and document.root.to_python() == json.loads(text)
    duplicate = parse(b'{"a": 1, "b": [2], "a": {"c": 3}}').root
    assert duplicate is not None and duplicate.to_python() == {"a": {"c": 3}, "b": [2]}


def test_the_deepest_allowed_manifest_reads_from_a_deep_caller(tmp_path: Path) -> None:
    """A manifest nested just under the limit is read, converted and linted the same at any
    caller depth: lint once reported a rule crash (ES000) for it from a deep stack."""
    # deferred: the linter and a task builder, for this test only
    from endstate_author.engine.jsonpos import MAX_DEPTH
    from endstate_author.lint.run import lint_task
    from tests.rules.conftest import TaskBuilder

    nested = "[" * (MAX_DEPTH - 2) + "1" + "]" * (MAX_DEPTH - 2)
    root = TaskBuilder(tmp_path)()
    manifest = json.loads((root / "task.json").read_text())
    text = json.dumps(manifest)[:-1] + f', "requires": {{"tool_calls": {nested}}}}}'
    for frames in (0, 600, 900):
        document = _from_depth(frames, lambda: parse(text.encode()))
        assert document.error is None and document.root is not None
        assert _from_depth(frames, document.root.to_python) == json.loads(text)
        found = _from_depth(frames, lambda: lint_task(root, text=text.encode()))
        assert not [d.message for d in found if d.code == "ES000"]


def test_decoder_messages_that_end_in_at_say_what_and_where() -> None:
    """json's "Invalid control character at" and "Unterminated string starting at" carry
    their position only in str(exc): the message must not end in a dangling "at"."""
    cases = {
        '{"a": "x\ty"}': ("a raw tab inside a string", 8),
        '{\n  "a": "x\x01y"}': ("a raw control character U+0001 inside a string", 11),
        '{"a": "x\ny"}': ("a line break inside a string: close the string", 8),
        '{"a": "abc': ("a string that is never closed", 6),
    }
    for text, (said, offset) in cases.items():
        error = parse(text).error
        assert error is not None and error.message.startswith(said), (text, error)
        assert error.offset == offset and not error.message.endswith(" at"), (text, error)
