"""ES0 — the file itself: is task.json readable, valid JSON, an object, free of duplicate keys."""

from __future__ import annotations

from collections.abc import Iterator

from endstate_author.engine.context import TaskContext
from endstate_author.engine.declare import document, rule
from endstate_author.engine.diagnostics import Diagnostic
from endstate_author.engine.jsonpos import JNode

document(
    "ES000",
    "internal-error",
    """A rule crashed, or an input could not be analysed at all.

    ## What it checks
    Nothing: it reports that the linter itself failed on this input, naming the rule, so
    the other rules' findings can still be trusted and shown.

    ## Why it matters
    A crash that silently dropped findings would look exactly like a clean task.

    ## Example
    `ES000 rule ES502 (changed-paths-within) crashed: KeyError: 'allowed'`

    ## Fix
    Report it with the task.json that triggers it; meanwhile `ignore = ["ES502"]` in
    `[tool.endstate-author]` silences the rule that crashes.
    """,
    scope="task",  # lint reports it for its own rules; prove has its own codes
)


@rule("ES001", "invalid-json")
def invalid_json(ctx: TaskContext) -> Iterator[Diagnostic]:
    """task.json is not valid JSON.

    ## What it checks
    The file must be readable, UTF-8 without a byte-order mark, and strict JSON (no
    comments, no trailing commas, no `NaN`). The finding points at the first syntax error;
    an empty, binary, non-UTF-8, oversized or unreadable file says so.

    ## Why it matters
    endstate refuses to load the task, so it never runs in any suite, and nothing else in
    the file can be checked until it parses.

    ## Example
    ```json
    {"id": "fix-off-by-one", "max_steps": 20,}
    ```

    ## Fix
    Remove the trailing comma (or whatever the message names); save as UTF-8 without BOM.
    """
    if ctx.raw is None:
        yield ctx.at_file("ES001", f"{ctx.read_error}; the task cannot load", ctx.manifest_path)
        return
    doc = ctx.doc
    if doc is None or doc.error is None:
        return
    err = doc.error
    line, col = doc.index.position(err.offset)
    end_line, end_col = doc.index.position(max(err.end, err.offset))
    if (end_line, end_col) == (line, col):
        end_col += 1
    yield ctx.at_file(
        "ES001",
        f"task.json is not valid JSON: {err.message}; endstate cannot load the task",
        ctx.manifest_path,
        line=line + 1,
        column=col + 1,
        end_line=end_line + 1,
        end_column=end_col + 1,
    )


@rule("ES002", "not-an-object")
def not_an_object(ctx: TaskContext) -> Iterator[Diagnostic]:
    """The top level of task.json is not an object.

    ## What it checks
    A manifest is one JSON object of keys (`id`, `category`, `graders`, ...).

    ## Why it matters
    An array or a string at the top level has no graders, so the task cannot load.

    ## Example
    ```json
    [{"name": "endstate.evals.graders:command_succeeds"}]
    ```

    ## Fix
    Wrap the content in an object: `{"graders": [...]}`.
    """
    if not ctx.valid_json or ctx.doc is None or ctx.doc.root is None:
        return
    root = ctx.doc.root
    if root.kind != "object":
        yield ctx.at_node(
            "ES002",
            f"the top level of task.json is {_article(root.kind)}, not an object; "
            "a manifest is an object of keys such as `graders`",
            root,
        )


def _article(kind: str) -> str:
    return {"array": "an array", "string": "a string", "number": "a number"}.get(kind, kind)


@rule("ES003", "duplicate-key")
def duplicate_key(ctx: TaskContext) -> Iterator[Diagnostic]:
    """A key appears twice in one object.

    ## What it checks
    Every object at every level, for two members with the same key.

    ## Why it matters
    JSON parsers keep the *last* value silently, so the first one reads as asserted in the
    file and is not: `"max_steps": 5` followed later by `"max_steps": 50` runs with 50.

    ## Example
    ```json
    {"graders": [...], "max_steps": 5, "max_steps": 50}
    ```

    ## Fix
    Keep one of them: the finding points at every occurrence but the last, which is the
    one that counts.
    """
    if ctx.doc is None or ctx.doc.root is None or ctx.doc.error is not None:
        return
    stack: list[tuple[JNode, str]] = [(ctx.doc.root, "")]
    while stack:
        node, where = stack.pop()
        if node.kind == "object":
            seen: dict[str, int] = {}
            for pair in node.pairs:
                seen[pair.key] = seen.get(pair.key, 0) + 1
            for pair in node.pairs:
                if seen.get(pair.key, 0) > 1 and pair is not node.pair(pair.key):
                    label = f"{where}.{pair.key}" if where else pair.key
                    yield ctx.at_node(
                        "ES003",
                        f"key {label!r} appears again later in this object; JSON keeps only "
                        "the last one, so this value is silently ignored",
                        pair.key_node,
                    )
            for pair in node.pairs:
                if pair.value is not None:
                    stack.append((pair.value, f"{where}.{pair.key}" if where else pair.key))
        elif node.kind == "array":
            for i, item in enumerate(node.items):
                stack.append((item, f"{where}[{i}]"))
