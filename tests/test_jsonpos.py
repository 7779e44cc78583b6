"""The two tree builders of jsonpos agree: the direct scanner used for valid JSON gives the
same nodes and byte ranges as tree-sitter, which stays the path for invalid text."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from endstate_author.jsonpos import JNode, _build_root, _parser, parse

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
