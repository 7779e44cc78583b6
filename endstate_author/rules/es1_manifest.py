"""ES1 — manifest keys and values. Every level of task.json is closed."""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from endstate_author.engine.context import MAX_MANIFEST_BYTES, TaskContext
from endstate_author.engine.declare import rule
from endstate_author.engine.diagnostics import Diagnostic, FileCreate, Fix, TextEdit, describe_json
from endstate_author.engine.suggest import did_you_mean, unique_suggestion
from endstate_harness.layout import CATEGORIES, STOP_REASONS

Loc = tuple[str | int, ...]


def allowed_keys(loc: Loc) -> list[str]:
    """The keys the object at ``loc`` may hold (aliases as written in JSON)."""
    # deferred: the pydantic model costs ~0.1 s to import; only a key lint does not know asks
    from endstate_harness.task import model_at

    model = model_at(loc)
    if model is None:
        return []
    return [f.alias or name for name, f in model.model_fields.items()]


def _errors(ctx: TaskContext, *types: str) -> Iterator[dict[str, Any]]:
    for err in ctx.model_errors:
        if err["type"] in types:
            yield err


def _loc(err: dict[str, Any]) -> Loc:
    return tuple(err["loc"])


def _is_bound_end(loc: Loc) -> bool:
    return len(loc) == 3 and loc[0] == "requires" and loc[2] in ("min", "max")


def _rename_fix(ctx: TaskContext, loc: Loc, new_key: str) -> Fix | None:
    pair = ctx.pair(loc)
    parent = ctx.node(loc[:-1])
    if pair is None or parent is None or parent.get(new_key) is not None:
        return None
    return Fix(
        title=f"rename {pair.key!r} to {new_key!r}",
        edits=(
            TextEdit(
                ctx.manifest_path, pair.key_node.start, pair.key_node.end, json.dumps(new_key)
            ),
        ),
    )


def _replace_value_fix(ctx: TaskContext, loc: Loc, value: str) -> Fix | None:
    node = ctx.node(loc)
    if node is None:
        return None
    return Fix(
        title=f"replace with {value!r}",
        edits=(TextEdit(ctx.manifest_path, node.start, node.end, json.dumps(value)),),
    )


def _where(loc: Loc) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "the top level"


@rule("ES101", "unknown-key")
def unknown_key(ctx: TaskContext) -> Iterator[Diagnostic]:
    """Unknown key, at any level of task.json.

    ## What it checks
    Every object is closed: the top level (plus `$schema`), each grader spec (`name`,
    `args`), `budget`, `requires`, each bound (`min`, `max`) and `recovery`. A key that is
    not in the format is reported at the key, with the nearest known key.

    ## Why it matters
    endstate 0.3.0 silently ignores unknown top-level, `budget` and `recovery` keys, so a
    typo such as `"max_step": 5` reads as a limit and limits nothing; `{"minimum": 1}` in a
    bound would parse as a bound with no ends and pass for any value.

    ## Example
    ```json
    "requires": {"denied_calls": {"minimum": 1}}
    ```

    ## Fix
    Use the key the message suggests (`min`); `lint --fix` renames it when the suggestion is
    unique and the right key is not already present.
    """
    present_at: dict[Loc, set[str]] = {}
    for err in _errors(ctx, "extra_forbidden"):
        loc = _loc(err)
        key = str(loc[-1])
        options = allowed_keys(loc[:-1])
        if loc[:-1] not in present_at:
            parent = ctx.node(loc[:-1])
            present_at[loc[:-1]] = {p.key for p in parent.pairs} if parent is not None else set()
        present = present_at[loc[:-1]]
        free = [o for o in options if o not in present]
        hint = did_you_mean(key, options)
        suggestion = unique_suggestion(key, free)
        taken = unique_suggestion(key, options)
        if taken and taken in present:
            hint += f" ({taken!r} is already set here)"
        fix = _rename_fix(ctx, loc, suggestion) if suggestion else None
        where = _where(loc[:-1])
        known = ", ".join(options)
        yield ctx.at_key(
            "ES101",
            f"unknown key {key!r} in {where}{hint or f' (known keys: {known})'}; "
            "an unknown key is ignored by endstate, so it reads as asserted and asserts nothing",
            loc,
            fix=fix,
        )


_TYPE_WORDS = {
    "int_type": "an integer",
    "float_type": "a number",
    "string_type": "a string",
    "bool_type": "true or false",
    "dict_type": "an object",
    "list_type": "an array",
    "model_type": "an object",
    "model_attributes_type": "an object",
}


@rule("ES102", "wrong-type-or-range")
def wrong_value(ctx: TaskContext) -> Iterator[Diagnostic]:
    """A value has the wrong type or is out of range.

    ## What it checks
    Types are strict: `"20"` is not an integer and `1` is not a boolean. Ranges: `max_steps`
    and `timeout_s` and `budget.max_context_tokens` must be positive, `crash_at_call` and
    `reserve_output_tokens` not negative; `recovery` needs `crash_at_call`.

    ## Why it matters
    endstate coerces some of these (`int("20")`) and refuses others at load time; either way
    the file does not say what runs. A zero budget or a negative timeout can never run.

    ## Example
    ```json
    {"max_steps": "20", "timeout_s": -1}
    ```

    ## Fix
    Write the value with its JSON type (`20`, not `"20"`) and inside its range.
    """
    for err in ctx.model_errors:
        loc = _loc(err)
        kind = err["type"]
        if kind in ("extra_forbidden", "literal_error"):
            continue
        if loc == ("graders",) and kind in ("missing", "too_short"):
            continue  # ES209
        if _is_bound_end(loc) and kind == "greater_than_equal":
            continue  # ES104
        if len(loc) == 3 and loc[0] == "graders" and loc[2] == "name":
            continue  # ES201 speaks for the grader name
        where = _where(loc)
        if kind == "missing":
            yield ctx.at_value(
                "ES102",
                f"{where} is required and missing; the task cannot load without it",
                loc[:-1],
            )
            continue
        got = describe_json(err.get("input"))
        if kind in _TYPE_WORDS:
            message = f"{where} must be {_TYPE_WORDS[kind]}, not {got}"
            if isinstance(err.get("input"), str) and kind in ("int_type", "float_type"):
                message += " (types are strict: write the number without quotes)"
        elif kind in ("greater_than", "greater_than_equal"):
            limit = err.get("ctx", {}).get("gt", err.get("ctx", {}).get("ge"))
            op = ">" if kind == "greater_than" else "≥"
            message = f"{where} must be {op} {limit}, not {got}; such a value can never run"
        else:
            message = f"{where}: {err['msg']} (got {got})"
        yield ctx.at_value("ES102", message + "; endstate would refuse or misread it", loc)


@rule("ES103", "unknown-category")
def unknown_category(ctx: TaskContext) -> Iterator[Diagnostic]:
    """Unknown category.

    ## What it checks
    `category` is one of `bug-fix feature refactor compaction permissioning recovery cost`.

    ## Why it matters
    A typo'd category is a task that quietly never runs in any `--category` filter, and
    that misses its category's contract checks (ES305–ES309).

    ## Example
    ```json
    {"category": "bugfix"}
    ```

    ## Fix
    Use the suggested category; `lint --fix` applies a unique suggestion.
    """
    for err in _errors(ctx, "literal_error"):
        loc = _loc(err)
        if loc != ("category",):
            continue
        value = err.get("input")
        if not isinstance(value, str):
            continue
        suggestion = unique_suggestion(value, CATEGORIES)
        yield ctx.at_value(
            "ES103",
            f"unknown category {value!r}{did_you_mean(value, CATEGORIES)} (categories: "
            f"{', '.join(CATEGORIES)}); a task with an unknown category runs in no filter",
            loc,
            fix=_replace_value_fix(ctx, loc, suggestion) if suggestion else None,
        )


@rule("ES104", "vacuous-bound")
def vacuous_bound(ctx: TaskContext) -> Iterator[Diagnostic]:
    """A `requires` bound with neither `min` nor `max`, `min > max`, or a negative end.

    ## What it checks
    Each bound of `requires` (`{"min": …, "max": …}`).

    ## Why it matters
    `{}` passes for any value: the task reads as asserting on the run and asserts nothing.
    `min > max` can never pass; a negative end is meaningless for a counter.

    ## Example
    ```json
    "requires": {"compaction_events": {}}
    ```

    ## Fix
    Give the bound the end you meant, e.g. `{"min": 1}`.
    """
    for err in _errors(ctx, "greater_than_equal"):
        loc = _loc(err)
        if _is_bound_end(loc):
            yield ctx.at_value(
                "ES104",
                f"requires.{loc[1]}.{loc[2]} is negative; a counter is never below 0",
                loc,
            )
    requires = ctx.data.get("requires")
    if not isinstance(requires, dict):
        return
    for counter, bound in requires.items():
        if counter == "stop_reason" or not isinstance(bound, dict):
            continue
        lo, hi = bound.get("min"), bound.get("max")
        if "min" not in bound and "max" not in bound:
            yield ctx.at_value(
                "ES104",
                f"requires.{counter} has neither min nor max, so it passes for any value and "
                "asserts nothing",
                ("requires", counter),
            )
        elif (
            isinstance(lo, int) and isinstance(hi, int) and _is_int(lo) and _is_int(hi) and lo > hi
        ):
            yield ctx.at_value(
                "ES104",
                f"requires.{counter} has min {lo} > max {hi}, so no run can ever pass",
                ("requires", counter),
            )


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@rule("ES105", "unknown-stop-reason")
def unknown_stop_reason(ctx: TaskContext) -> Iterator[Diagnostic]:
    """Unknown `requires.stop_reason`.

    ## What it checks
    The loop stops with one of `end_turn tool_use max_tokens budget_exceeded max_steps
    error`; `stop_reason` is compared for equality with it.

    ## Why it matters
    A stop reason the loop never produces makes the task fail for every agent.

    ## Example
    ```json
    "requires": {"stop_reason": "end-turn"}
    ```

    ## Fix
    Use the suggested reason; `lint --fix` applies a unique suggestion.
    """
    for err in _errors(ctx, "literal_error"):
        loc = _loc(err)
        if loc != ("requires", "stop_reason"):
            continue
        value = err.get("input")
        if not isinstance(value, str):
            continue
        suggestion = unique_suggestion(value, STOP_REASONS)
        yield ctx.at_value(
            "ES105",
            f"unknown stop reason {value!r}{did_you_mean(value, STOP_REASONS)}; the loop never "
            "stops that way, so this requirement fails every run",
            loc,
            fix=_replace_value_fix(ctx, loc, suggestion) if suggestion else None,
        )


_KEBAB = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")


@rule("ES106", "id-mismatch", "warning")
def id_mismatch(ctx: TaskContext) -> Iterator[Diagnostic]:
    """`id` differs from the folder name, or is not lower-case kebab-case.

    ## What it checks
    The task's id (the `id` key, else the folder name) against its folder's name and the
    pattern `lower-case-words-with-dashes`.

    ## Why it matters
    `--task ID` and reports use the id while people navigate by folder; when they differ,
    the task someone edits is not the one they filter for. Odd ids break shell filters.

    ## Example
    folder `fix-chunk/` with `"id": "Fix_Chunk"`

    ## Fix
    Rename the folder or the id so both read `fix-chunk`.
    """
    task_id = ctx.data.get("id")
    folder = ctx.root.name
    if isinstance(task_id, str):
        if task_id != folder:
            yield ctx.at_value(
                "ES106",
                f"id {task_id!r} differs from the folder name {folder!r}; filters use the id "
                "and people navigate by folder",
                ("id",),
            )
        elif not _KEBAB.match(task_id):
            yield ctx.at_value(
                "ES106",
                f"id {task_id!r} is not lower-case kebab-case (like 'fix-chunk-off-by-one')",
                ("id",),
            )
    elif "id" not in ctx.data and not _KEBAB.match(folder):
        yield ctx.at_file(
            "ES106",
            f"the task's id is its folder name {folder!r}, which is not lower-case kebab-case",
            ctx.manifest_path,
        )


@rule("ES107", "duplicate-id", scope="suite")
def duplicate_id(contexts: list[TaskContext]) -> Iterator[Diagnostic]:
    """Two tasks in one suite share an id.

    ## What it checks
    Every task's id (the `id` key, else the folder name) across the suite.

    ## Why it matters
    endstate refuses to load a suite with duplicate ids, and a pass/fail vector needs one
    index per task.

    ## Example
    `tasks/a/fix-parser/task.json` and `tasks/b/fix-parser/task.json`

    ## Fix
    Give one of them another id (and folder name).
    """
    seen: dict[str, TaskContext] = {}
    for ctx in contexts:
        if ctx.quick_data is None:
            continue
        task_id = ctx.quick_id
        first = seen.setdefault(task_id, ctx)
        if first is not ctx:
            message = (
                f"id {task_id!r} is also the id of {first.root}; endstate refuses a suite with "
                "duplicate ids"
            )
            if "id" in (ctx.quick_data or {}):
                yield ctx.at_value("ES107", message, ("id",))
            else:
                yield ctx.at_file("ES107", message, ctx.manifest_path)


@rule("ES108", "no-usable-context")
def no_usable_context(ctx: TaskContext) -> Iterator[Diagnostic]:
    """`reserve_output_tokens` ≥ `max_context_tokens`: no usable context.

    ## What it checks
    Usable context is `max_context_tokens - reserve_output_tokens` (defaults 128000 and
    8000); it must be positive.

    ## Why it matters
    With nothing usable, the first message already overflows the budget and every run
    compacts away its own task.

    ## Example
    ```json
    "budget": {"max_context_tokens": 4000, "reserve_output_tokens": 8000}
    ```

    ## Fix
    Raise `max_context_tokens` or lower `reserve_output_tokens`.
    """
    budget = ctx.data.get("budget")
    if not isinstance(budget, dict):
        return
    top = budget.get("max_context_tokens", 128_000)
    reserve = budget.get("reserve_output_tokens", 8_000)
    if _is_int(top) and _is_int(reserve) and reserve >= top > 0:
        yield ctx.at_value(
            "ES108",
            f"reserve_output_tokens ({reserve}) ≥ max_context_tokens ({top}) leaves no usable "
            "context, so every run overflows at its first message",
            ("budget",),
        )


def _undecodable(path: Path) -> tuple[int, int, int] | None:
    """(line, column, byte) of the first byte of ``path`` that is not UTF-8, or None.

    Why here and not in the context's ``prompt_md``: that one replaces bad bytes so the other
    rules can read the text; the task loader refuses the file, and lint must say so."""
    data = b""
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_MANIFEST_BYTES + 1)
        whole = len(data) <= MAX_MANIFEST_BYTES
        data = data[:MAX_MANIFEST_BYTES]
        # a cut may fall inside a character: only a whole file must end on a whole one
        codecs.getincrementaldecoder("utf-8")().decode(data, final=whole)
    except UnicodeDecodeError as exc:
        head = data[: exc.start]
        line = head.count(b"\n") + 1
        column = len(head) - (head.rfind(b"\n") + 1) + 1
        return line, column, data[exc.start]
    except OSError:
        return None
    return None


@rule("ES109", "prompt")
def prompt_problems(ctx: TaskContext) -> Iterator[Diagnostic]:
    """No prompt at all (E); both prompt.md and a `prompt` key (W); prompt.md empty or not
    UTF-8 (E).

    ## What it checks
    A task needs a prompt from prompt.md or the `prompt` key; prompt.md wins.

    ## Why it matters
    Without a prompt the agent is told nothing and endstate refuses the task. With both,
    the key is dead text that someone will edit in vain. An empty prompt.md does not fall
    back to the key: the task has no prompt.

    ## Example
    prompt.md present and `"prompt": "Fix the parser"` in task.json.

    ## Fix
    Keep the prompt in prompt.md. When prompt.md is empty (whitespace only) and the key
    holds the text, `lint --fix` moves the key's text into prompt.md and removes the key.
    """
    key_text = ctx.data.get("prompt")
    has_key = isinstance(key_text, str) and bool(key_text.strip())
    md = ctx.prompt_md
    if md is None:
        if not has_key:
            yield ctx.at_file(
                "ES109",
                "the task has no prompt (no prompt.md and no `prompt` key), so the agent is "
                "told nothing and endstate refuses it",
                ctx.manifest_path,
                severity="error",
            )
        return
    prompt_path = ctx.root / "prompt.md"
    bad = _undecodable(prompt_path)
    if bad is not None:
        line, column, byte = bad
        yield ctx.at_file(
            "ES109",
            f"prompt.md is not UTF-8 (byte 0x{byte:02x} at {line}:{column}): the task cannot "
            "load, so the agent is told nothing; save it as UTF-8",
            prompt_path, line=line, column=column, end_column=column + 1, severity="error",
        )
        return
    if not md.strip():
        fix = _move_prompt_fix(ctx, str(key_text)) if has_key else None
        yield ctx.at_file(
            "ES109",
            "prompt.md is empty; it wins over the `prompt` key, so the agent is told nothing",
            prompt_path,
            severity="error",
            fix=fix,
        )
        return
    if "prompt" in ctx.data:
        yield ctx.at_key(
            "ES109",
            "both prompt.md and a `prompt` key: prompt.md wins, so this key is dead text",
            ("prompt",),
            severity="warning",
            fix=_remove_member_fix(ctx, "prompt", safe=False),
        )


def _remove_member_fix(ctx: TaskContext, key: str, *, safe: bool) -> Fix | None:
    edit = remove_member_edit(ctx, key)
    return Fix(title=f"remove the {key!r} key", edits=(edit,), safe=safe) if edit else None


def remove_member_edit(ctx: TaskContext, key: str) -> TextEdit | None:
    """An edit deleting top-level member ``key`` with its comma, keeping the rest byte-exact."""
    root = ctx.doc.root if ctx.doc else None
    if root is None or root.kind != "object" or ctx.raw is None:
        return None
    pairs = root.pairs
    for i, pair in enumerate(pairs):
        if pair.key != key or pair is not root.pair(key):
            continue
        raw = ctx.raw
        if i + 1 < len(pairs):
            start, end = _line_start(raw, pair.start), _line_start(raw, pairs[i + 1].start)
            if (
                raw[start : pair.start].strip()
                or raw[pair.end : pairs[i + 1].start].count(b"\n") != 1
            ):
                start, end = pair.start, pairs[i + 1].start
        elif i > 0:
            start, end = pairs[i - 1].end, pair.end
        else:
            start, end = pair.start, pair.end
        return TextEdit(ctx.manifest_path, start, end, "")
    return None


def _line_start(raw: bytes, offset: int) -> int:
    return raw.rfind(b"\n", 0, offset) + 1


def _move_prompt_fix(ctx: TaskContext, text: str) -> Fix | None:
    edit = remove_member_edit(ctx, "prompt")
    if edit is None:
        return None
    body = text.strip() + "\n"
    return Fix(
        title="move the `prompt` key's text into prompt.md",
        edits=(edit,),
        creates=(FileCreate(ctx.root / "prompt.md", body),),
    )
