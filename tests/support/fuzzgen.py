"""Hypothesis strategies for task.json: documents drawn from the shipped schema, then mutated.

Why both halves: documents that follow the schema reach deep into the rules (grader
resolution, argument type checks, the category contracts), and mutations of them reach the
file-level code (the JSON parser, positions, encodings). Purely random bytes would almost
never get past ``JSON is invalid`` and would test one rule only.

The converter understands the subset of JSON Schema the project's schema uses (``$ref``,
``anyOf``, ``type``, ``enum``, ``const``, object properties/required/additionalProperties,
array items, numeric minimum/exclusiveMinimum). Shared by ``tests/reliability`` and
``bench/fuzz.py`` (see :mod:`tests.support`).
"""

from __future__ import annotations

import json
import random
from functools import cache
from typing import Any

from hypothesis import strategies as st

from endstate_author.schema import SHIPPED as SCHEMA_PATH

GRADER_NAMES = [
    "endstate.evals.graders:command_succeeds",
    "endstate.evals.graders:files_unchanged",
    "endstate.evals.graders:no_new_skips",
    "endstate.evals.graders:changed_paths_within",
    "endstate.evals.graders:tree_unchanged",
    "endstate.evals.graders:paths_exist",
    "endstate.evals.graders:file_matches",
    "endstate.evals.graders:pattern_count",
    "endstate.evals.graders.command_succeeds",
    "graders:missing",
    "mytasks.graders:no_secrets",
    "no_colon_here",
    ":",
    "os:system",
]
ARG_NAMES = ["command", "paths", "allowed", "pattern", "path", "glob", "timeout_s", "name",
             "expect_exit_code", "maximum", "minimum", "text", "should_match"]  # fmt: skip
KEY_POOL = ["id", "category", "graders", "requires", "budget", "recovery", "max_steps", "ID",
            "timeout_s", "prompt", "description", "$schema", "min", "max", "name", "args",
            "graders ", "max_step", "minimum", "crash_at_call", "stop_reason", ""]  # fmt: skip


@cache
def schema() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    return loaded


def _text() -> st.SearchStrategy[str]:
    return st.one_of(
        st.text(max_size=20),
        st.sampled_from(["", " ", "tests/test_x.py", "../../etc/passwd", "/etc/passwd", "*",
                         "python -m unittest discover -s tests -t . -q", "\u202e", "\x00"]),
    )  # fmt: skip


def _any_json(depth: int = 3) -> st.SearchStrategy[Any]:
    leaves = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.floats(allow_nan=False, allow_infinity=False),
        _text(),
    )
    return st.recursive(
        leaves,
        lambda inner: st.one_of(
            st.lists(inner, max_size=4),
            st.dictionaries(st.sampled_from(ARG_NAMES), inner, max_size=4),
        ),
        max_leaves=8,
    )


def from_schema(node: dict[str, Any], key: str = "") -> st.SearchStrategy[Any]:
    """A strategy for values valid under ``node`` (with a few hints by property name)."""
    if "$ref" in node:
        name = node["$ref"].rsplit("/", 1)[-1]
        return st.deferred(lambda: from_schema(schema()["$defs"][name], key))
    if "anyOf" in node:
        return st.one_of([from_schema(n, key) for n in node["anyOf"]])
    if "enum" in node:
        return st.sampled_from(node["enum"])
    if "const" in node:
        return st.just(node["const"])
    kind = node.get("type")
    if kind == "object":
        props: dict[str, Any] = node.get("properties", {})
        required = set(node.get("required", []))
        if key == "args" or (not props and node.get("additionalProperties", True)):
            return st.dictionaries(st.sampled_from(ARG_NAMES), _any_json(), max_size=4)
        fixed = {k: from_schema(v, k) for k, v in props.items() if k in required}
        optional = {k: from_schema(v, k) for k, v in props.items() if k not in required}
        return st.fixed_dictionaries(fixed, optional=optional)
    if kind == "array":
        items = node.get("items", {})
        return st.lists(from_schema(items, key) if items else _any_json(), max_size=5)
    if kind == "string":
        if key == "name":
            return st.one_of(st.sampled_from(GRADER_NAMES), _text())
        return _text()
    if kind == "integer":
        low = node.get("minimum")
        if "exclusiveMinimum" in node:
            low = node["exclusiveMinimum"] + 1
        return st.integers(min_value=low, max_value=10**6)
    if kind == "number":
        return st.floats(min_value=node.get("minimum", 0.0), max_value=1e6, allow_nan=False)
    if kind == "boolean":
        return st.booleans()
    if kind == "null":
        return st.none()
    return _any_json()


def documents() -> st.SearchStrategy[Any]:
    """Documents valid under the shipped schema."""
    return from_schema(schema())


# ----------------------------------------------------------------------------- mutations

MUTATIONS = (
    "truncate", "swap-keys", "flip-type", "deep-nesting", "huge-number",
    "huge-string", "invalid-utf8", "nul-bytes", "bom", "duplicate-key", "random-bytes", "none",
)  # fmt: skip


def _paths(value: Any, here: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [here]
    if isinstance(value, dict):
        for k, v in value.items():
            out.extend(_paths(v, (*here, k)))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out.extend(_paths(v, (*here, i)))
    return out


def _replace(doc: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    parent = doc
    for part in path[:-1]:
        parent = parent[part]
    parent[path[-1]] = new
    return doc


HUGE_NUMBERS = ["1" + "0" * 5000, "9" * 100_000, "-1e999999", "1e-999999", "-0", "1.0e+308",
                "123456789012345678901234567890", "NaN", "Infinity", "-Infinity"]  # fmt: skip
FLIPS: list[Any] = [None, True, 0, -1, 1.5, "", "x", [], {}, [1, "a"], {"k": None}]


def mutate(doc: Any, kind: str, rnd: random.Random) -> bytes:
    """Serialise ``doc`` and damage it the ``kind`` way (see :data:`MUTATIONS`)."""
    doc = json.loads(json.dumps(doc))  # a private copy
    if kind == "swap-keys" and isinstance(doc, dict) and doc:
        paths = [p for p in _paths(doc) if p and isinstance(p[-1], str)]
        if paths:
            path = rnd.choice(paths)
            parent = doc
            for part in path[:-1]:
                parent = parent[part]
            value = parent.pop(path[-1])
            parent[rnd.choice(KEY_POOL)] = value
    elif kind == "flip-type":
        path = rnd.choice(_paths(doc))
        doc = _replace(doc, path, rnd.choice(FLIPS))
    elif kind == "huge-number":
        path = rnd.choice(_paths(doc))
        number = rnd.choice(HUGE_NUMBERS)
        marker = "__HUGE_NUMBER__"
        doc = _replace(doc, path, marker)
        return json.dumps(doc).replace(f'"{marker}"', number).encode()
    elif kind == "huge-string":
        path = rnd.choice(_paths(doc))
        doc = _replace(doc, path, rnd.choice(["x" * 300_000, "é" * 100_000, "\\" * 50_000]))
    elif kind == "duplicate-key" and isinstance(doc, dict):
        text = json.dumps(doc)
        return (text[:-1] + (", " if doc else "") + '"graders": [], "id": 1}').encode()
    text = json.dumps(doc, indent=rnd.choice([None, 2]), ensure_ascii=rnd.random() < 0.5)
    data = text.encode("utf-8")
    if kind == "truncate":
        return data[: rnd.randrange(len(data) + 1)]
    if kind == "deep-nesting":
        depth = rnd.choice([100, 1000, 20_000, 200_000])
        opener, closer = rnd.choice([("[", "]"), ('{"a":', "}")])
        nested = opener * depth + "1" + closer * rnd.choice([depth, depth // 2, 0])
        at = rnd.randrange(len(data) + 1)
        return data[:at] + nested.encode() + data[at:]
    if kind == "invalid-utf8":
        junk = rnd.choice(
            [b"\xff", b"\xfe\xff", b"\xc3", b"\xed\xa0\x80", b"\x80\x80", b"\xf4\x90"]
        )
        at = rnd.randrange(len(data) + 1)
        return data[:at] + junk + data[at:]
    if kind == "nul-bytes":
        at = rnd.randrange(len(data) + 1)
        return data[:at] + b"\x00" * rnd.randint(1, 3) + data[at:]
    if kind == "bom":
        return rnd.choice([b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff"]) + data
    if kind == "random-bytes":
        return bytes(rnd.randrange(256) for _ in range(rnd.randrange(64)))
    return data


@st.composite
def task_json_bytes(draw: st.DrawFn) -> tuple[str, bytes]:
    """(mutation name, bytes): a schema document, damaged one way."""
    doc = draw(documents())
    kind = draw(st.sampled_from(MUTATIONS))
    seed = draw(st.integers(min_value=0, max_value=2**32 - 1))
    return kind, mutate(doc, kind, random.Random(seed))
