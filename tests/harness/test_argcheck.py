"""argcheck against jsonschema: never "valid" where jsonschema finds an error.

Every tool's own schema, and small schemas of the same keywords, are checked on thousands of
argument sets drawn from values at the edges of each keyword (bools among numbers, 2.0 as an
integer, empty strings, missing and extra keys, nested objects). ``fits`` may say "ask
jsonschema" for a valid call (it never does for these schemas, also checked), but it must
never accept what jsonschema rejects. A tool call with bad arguments still gets
jsonschema's message.
"""

from __future__ import annotations

import itertools
import random
import subprocess
import sys
from typing import Any

import jsonschema
import pytest

from endstate_harness.agent.argcheck import fits
from endstate_harness.agent.tools import ToolError, argument_error, default_tools

VALUES: list[Any] = [
    None, True, False, 0, 1, -1, 2, 0.0, 0.5, 1.0, 2.0, -0.0, 1e300, float("inf"),
    float("nan"), "", "a", "path/x.py", " ", [], ["a"], {}, {"a": 1},
]  # fmt: skip

SCHEMAS: list[dict[str, Any]] = [
    {"type": "integer", "minimum": 1},
    {"type": "number", "exclusiveMinimum": 0},
    {"type": "string", "minLength": 1},
    {"type": "string", "minLength": 2, "description": "x"},
    {"type": "boolean"},
    {"type": "object"},
    {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"],
     "additionalProperties": False},
    {"type": "number", "minimum": 0.5},
]  # fmt: skip


def _jsonschema_valid(schema: dict[str, Any], value: Any) -> bool:
    cls = jsonschema.validators.validator_for(schema)
    return next(iter(cls(schema).iter_errors(value)), None) is None


def _tool_arguments(schema: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    args: dict[str, Any] = {}
    for name in schema["properties"]:
        roll = rng.random()
        if roll < 0.15:
            continue  # missing
        args[name] = rng.choice(VALUES) if roll < 0.55 else _plausible(schema["properties"][name])
    if rng.random() < 0.1:
        args["unexpected"] = rng.choice(VALUES)
    return args


def _plausible(sub: dict[str, Any]) -> Any:
    return {"string": "x", "integer": 3, "number": 1.5, "boolean": True}[sub["type"]]


def test_every_tool_schema_is_covered_and_never_accepts_what_jsonschema_rejects() -> None:
    rng = random.Random(16)
    checked = accepted = 0
    for tool in default_tools():
        schema = tool.parameters
        for _ in range(1500):
            args = _tool_arguments(schema, rng)
            truth = _jsonschema_valid(schema, args)
            assert fits(schema, args) == truth, (tool.name, args)
            checked += 1
            accepted += truth
        assert fits(schema, {**_all_plausible(schema)}), tool.name  # a valid call needs no import
    assert checked == 1500 * len(default_tools()) and 0 < accepted < checked


def _all_plausible(schema: dict[str, Any]) -> dict[str, Any]:
    return {name: _plausible(sub) for name, sub in schema["properties"].items()}


@pytest.mark.parametrize("schema", SCHEMAS, ids=lambda s: "-".join(map(str, s.values()))[:40])
def test_each_keyword_at_its_edges(schema: dict[str, Any]) -> None:
    values = [*VALUES, {"a": "x"}, {"a": ""}, {"a": 1}, {"a": "x", "b": 1}]
    for value in values:
        if schema["type"] == "object" and "properties" in schema:
            truth = _jsonschema_valid(schema, value)
            assert fits(schema, value) == truth, value
            continue
        wrapped = {"type": "object", "properties": {"v": schema}, "required": ["v"]}
        truth = _jsonschema_valid(wrapped, {"v": value})
        assert fits(wrapped, {"v": value}) == truth, value


def test_a_keyword_it_does_not_know_is_left_to_jsonschema() -> None:
    for schema in (
        {"type": "object", "properties": {"v": {"type": "string", "pattern": "^a"}}},
        {"type": "object", "properties": {"v": {"type": "array"}}},
        {"type": "object", "properties": {"v": {"enum": [1]}}},
        {"type": "string"},  # not an object at the top
        {"type": "object", "additionalProperties": {"type": "string"}},
        {"type": "object", "additionalProperties": 0},  # no bool: not a schema it knows
    ):
        assert not fits(schema, {"v": "a"})
    # ... and jsonschema then decides: valid here, so no error
    pattern = {"type": "object", "properties": {"v": {"type": "string", "pattern": "^a"}}}
    assert argument_error(pattern, {"v": "abc"}) is None
    assert argument_error(pattern, {"v": "xbc"}) == "'xbc' does not match '^a'"


def test_bad_arguments_get_jsonschemas_words() -> None:
    read = next(t for t in default_tools() if t.name == "read")
    with pytest.raises(ToolError, match="bad arguments for read: 'path' is a required property"):
        read({}, workspace=None)  # type: ignore[arg-type]
    with pytest.raises(ToolError, match="0 is less than the minimum of 1"):
        read({"path": "a", "offset": 0}, workspace=None)  # type: ignore[arg-type]


def test_a_scripted_run_of_valid_calls_never_imports_jsonschema() -> None:
    code = (
        "import sys, tempfile, pathlib\n"
        "from endstate_harness.agent.tools import DirectoryWorkspace, default_tools\n"
        "root = pathlib.Path(tempfile.mkdtemp())\n"
        "ws = DirectoryWorkspace(root)\n"
        "tools = {t.name: t for t in default_tools()}\n"
        "tools['write']({'path': 'a.txt', 'content': 'hi'}, ws)\n"
        "print(tools['read']({'path': 'a.txt'}, ws).strip())\n"
        "print('jsonschema' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split()[-1] == "False", out.stdout + out.stderr


def test_combinations_of_the_keywords_agree() -> None:
    keywords = [("minimum", 1), ("exclusiveMinimum", 0), ("minLength", 1)]
    for kind, r in itertools.product(("integer", "number", "string"), range(len(keywords) + 1)):
        for chosen in itertools.combinations(keywords, r):
            sub = {"type": kind, **dict(chosen)}
            wrapped = {"type": "object", "properties": {"v": sub}, "additionalProperties": False}
            for value in VALUES:
                truth = _jsonschema_valid(wrapped, {"v": value})
                assert fits(wrapped, {"v": value}) == truth, (sub, value)
