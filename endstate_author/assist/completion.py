"""Completion in task.json: keys, categories, stop reasons, bounds, grader names (with a
snippet of their required arguments), argument names and fixture paths.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from endstate_author.assist.cursor import CursorContext, JsonPath, arg_of, cursor_context
from endstate_author.assist.grader_views import REFERENCE_MODULE, Graders, GraderView
from endstate_author.assist.paths import fixture_paths
from endstate_author.assist.vocabulary import (
    CATEGORY_TEXT,
    MAX_DOCUMENT_BYTES,
    PATH_ARGS,
    STOP_REASON_TEXT,
    model_fields,
)
from endstate_harness.layout import CATEGORIES, COUNTERS, STOP_REASONS
from endstate_harness.task import model_at
from endstate_harness.task_model import Requires

CompletionKind = Literal["property", "value", "enum", "function", "file", "folder", "snippet"]


@dataclass(frozen=True)
class CompletionItem:
    """One proposal. ``insert`` is a snippet (``$1``, ``${1|a,b|}``) replacing ``start:end``."""

    label: str
    insert: str
    start: int
    end: int
    kind: CompletionKind = "value"
    detail: str = ""
    documentation: str = ""
    filter_text: str | None = None
    sort_text: str | None = None
    is_snippet: bool = True


_KEY_SNIPPETS: dict[str, str] = {
    "$schema": '"${1}"',
    "id": '"${1}"',
    "category": '"${1|' + ",".join(CATEGORIES) + '|}"',
    "description": '"${1}"',
    "prompt": '"${1}"',
    "max_steps": "${1:25}",
    "timeout_s": "${1:300.0}",
    "budget": '{"max_context_tokens": ${1:128000}, "reserve_output_tokens": ${2:8000}}',
    "graders": '[\n\t{"name": "${1}", "args": {${2}}}\n]',
    "requires": "{${1}}",
    "recovery": '{"crash_at_call": ${1:0}, "after_side_effect": ${2|false,true|}}',
    "max_context_tokens": "${1:128000}",
    "reserve_output_tokens": "${1:8000}",
    "crash_at_call": "${1:0}",
    "after_side_effect": "${1|false,true|}",
    "name": '"${1}"',
    "args": "{${1}}",
    "stop_reason": '"${1|' + ",".join(STOP_REASONS) + '|}"',
    "min": "${1:1}",
    "max": "${1:1}",
}


def _key_item(
    ctx: CursorContext, key: str, value_snippet: str, detail: str, doc: str
) -> CompletionItem:
    lead = ", " if ctx.needs_comma and not ctx.in_string else ""
    return CompletionItem(
        label=key,
        insert=f"{lead}{json.dumps(key)}: {value_snippet}",
        start=ctx.token_start,
        end=ctx.token_end,
        kind="property",
        detail=detail,
        documentation=doc,
        filter_text=json.dumps(key) if ctx.in_string else key,
    )


def _string_item(
    ctx: CursorContext,
    value: str,
    *,
    kind: CompletionKind = "value",
    detail: str = "",
    doc: str = "",
    extra: str = "",
    sort: str | None = None,
) -> CompletionItem:
    literal = json.dumps(value)
    escaped = literal.replace("\\", "\\\\").replace("$", "\\$").replace("}", "\\}")
    return CompletionItem(
        label=value,
        insert=escaped + extra,
        start=ctx.token_start,
        end=ctx.token_end,
        kind=kind,
        detail=detail,
        documentation=doc,
        filter_text=literal if ctx.in_string else value,
        sort_text=sort,
    )


def _args_snippet(view: GraderView, first: int = 1) -> str:
    parts = []
    n = first
    for p in view.required:
        ann = p.annotation.replace(" ", "")
        if ann.startswith("list"):
            value = f'["${{{n}}}"]'
        elif ann.startswith(("int", "float")):
            value = f"${{{n}:0}}"
        elif ann.startswith("bool"):
            value = f"${{{n}|true,false|}}"
        else:
            value = f'"${{{n}}}"'
        parts.append(f'"{p.name}": {value}')
        n += 1
    return "{" + ", ".join(parts) + "}"


def complete(
    root: Path,
    data: bytes,
    offset: int,
    *,
    graders: Graders | None = None,
) -> list[CompletionItem]:
    """Completion proposals at ``offset`` of task.json ``data`` (any state of typing)."""
    if len(data) > MAX_DOCUMENT_BYTES:
        return []
    ctx = cursor_context(data, offset)
    if ctx.kind == "key":
        return _complete_key(root, ctx, graders)
    if ctx.kind == "value":
        return _complete_value(root, ctx, graders)
    return []


def _complete_key(root: Path, ctx: CursorContext, graders: Graders | None) -> list[CompletionItem]:
    path = ctx.path
    present = set(ctx.present_keys)
    items: list[CompletionItem] = []
    if len(path) == 3 and path[0] == "graders" and path[2] == "args" and isinstance(path[1], int):
        name = ctx.object_scalars(path[:2]).get("name")
        view = (graders or Graders(None)).resolve(name) if isinstance(name, str) else None
        if view is None:
            return []
        for p in view.params:
            if p.name in present:
                continue
            snippet = (
                '["${1}"]'
                if p.annotation.replace(" ", "").startswith("list")
                else ("${1:0}" if p.annotation.startswith(("int", "float")) else '"${1}"')
            )
            if p.name in ("should_match", "should_contain"):
                snippet = "${1|true,false|}"
            need = "required" if p.required else f"optional, default {p.default}"
            items.append(
                _key_item(ctx, p.name, snippet, f"{p.annotation} ({need})", view.signature)
            )
        return items
    model = model_at(path)
    if model is None:
        return []
    for key, ann, desc in model_fields(model):
        if key in present:
            continue
        snippet = _KEY_SNIPPETS.get(key, "${1}")
        doc = desc
        if model is Requires and key in COUNTERS:
            snippet = '{"${1|min,max|}": ${2:1}}'
            doc = f"Bound on {COUNTERS[key]}: {{min?, max?}}, inclusive."
        items.append(_key_item(ctx, key, snippet, ann, doc))
    return items


def _complete_value(
    root: Path, ctx: CursorContext, graders: Graders | None
) -> list[CompletionItem]:
    path = ctx.path
    if path == ("category",):
        return [_string_item(ctx, c, kind="enum", doc=CATEGORY_TEXT.get(c, "")) for c in CATEGORIES]
    if path == ("requires", "stop_reason"):
        return [
            _string_item(ctx, s, kind="enum", doc=STOP_REASON_TEXT.get(s, "")) for s in STOP_REASONS
        ]
    if len(path) == 2 and path[0] == "requires" and path[1] in COUNTERS:
        return [
            CompletionItem(
                label,
                insert,
                ctx.token_start,
                ctx.token_end,
                "snippet",
                "bound",
                f"Bound on {COUNTERS[str(path[1])]}",
            )
            for label, insert in (
                ("{min}", '{"min": ${1:1}}'),
                ("{max}", '{"max": ${1:1}}'),
                ("{min, max}", '{"min": ${1:1}, "max": ${2:1}}'),
            )
        ]
    cat = graders or Graders(None)
    if len(path) == 2 and path[0] == "graders" and isinstance(path[1], int) and not ctx.in_string:
        return [
            CompletionItem(
                label=v.name,
                insert='{"name": ' + json.dumps(v.name) + ', "args": ' + _args_snippet(v) + "}",
                start=ctx.token_start,
                end=ctx.token_end,
                kind="snippet",
                detail=v.signature,
                documentation=v.doc,
            )
            for v in cat.all()
        ]
    if len(path) == 3 and path[0] == "graders" and path[2] == "name":
        has_args = "args" in ctx.object_scalars(path[:2]) or _object_has_key(ctx, path[:2], "args")
        items = []
        for v in cat.all():
            extra = "" if has_args or not v.required else ', "args": ' + _args_snippet(v)
            sort = "0" if v.name.startswith(REFERENCE_MODULE) else "1"
            items.append(
                _string_item(
                    ctx,
                    v.name,
                    kind="function",
                    detail=v.signature,
                    doc=v.doc,
                    extra=extra,
                    sort=sort + v.name,
                )
            )
        return items
    arg = arg_of(path)
    if arg is not None and arg in PATH_ARGS:
        return _path_items(root, ctx, arg)
    return []


def _object_has_key(ctx: CursorContext, path: JsonPath, key: str) -> bool:
    return key in ctx.object_scalars(path) or (
        ctx.path[: len(path)] == path and key in ctx.present_keys
    )


def _path_items(root: Path, ctx: CursorContext, arg: str) -> list[CompletionItem]:
    files, folders = fixture_paths(root)
    items: list[CompletionItem] = []
    if arg in ("start_dir", "top_level_dir"):
        for folder in [".", *folders]:
            items.append(_string_item(ctx, folder, kind="folder", detail="fixture folder"))
        return items
    for rel in files:
        items.append(_string_item(ctx, rel, kind="file", detail="fixture file"))
    if arg == "allowed":
        for folder in folders:
            items.append(_string_item(ctx, f"{folder}/*", kind="folder", detail="everything below"))
    return items
