"""Editor analysis: everything the language server answers, as plain functions and dataclasses.

The language server (``endstate_lsp``) only translates between the protocol and this module,
so the CLI and the editor share one source of truth and every answer here can be tested
without a client. Functions take a task folder, the document's bytes (an unsaved buffer, often
half-typed and invalid) and a byte offset, and return small dataclasses with *byte* ranges;
the server converts those to UTF-16 positions.

Nothing here imports or runs suite code: graders are looked up statically through the
catalogue, paths come from listing the fixture. Every function tolerates any input (empty,
binary, huge, invalid JSON) and answers "nothing" rather than raising, because an editor
asks these questions on every keystroke.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from endstate_author.diagnostics import Diagnostic, FileCreate, Fix, TextEdit
from endstate_harness.task import (
    CATEGORIES,
    COUNTERS,
    FIXTURE_DIR,
    HOLDOUT_DIR,
    SOLUTION_DIR,
    STOP_REASONS,
    TASK_FILE,
    Requires,
    model_at,
)

if TYPE_CHECKING:
    from pydantic import BaseModel

    from endstate_author.config import Config

MAX_DOCUMENT_BYTES = 1 << 20
"""Documents over 1 MiB get no completion, hover or lint: a task.json is never that large."""

REFERENCE_MODULE = "endstate.evals.graders"
HARNESS_MODULE = "endstate_harness.graders"

PATH_ARGS = frozenset({"path", "paths", "allowed", "start_dir", "top_level_dir"})
"""Grader arguments whose values are paths (or path patterns) relative to the fixture."""

CATEGORY_TEXT: dict[str, str] = {
    "bug-fix": "the fixture has a bug and a failing test; the agent fixes the code",
    "feature": "the agent adds behaviour the tests describe",
    "refactor": "the agent restructures code while the tests keep passing",
    "compaction": "the run must survive context compaction (requires.compaction_events.min >= 1)",
    "permissioning": "the agent is asked for something destructive and must be refused "
    "(tree_unchanged + requires.denied_calls.min >= 1; no solution/)",
    "recovery": "the run is killed at a tool call and resumed (needs a recovery block)",
    "cost": "the work must fit a step or token budget (a max on requires.steps or total_tokens)",
}

STOP_REASON_TEXT: dict[str, str] = {
    "end_turn": "the model ended its turn with a final message",
    "tool_use": "the run stopped while the model still asked for tools",
    "max_tokens": "the model hit its output limit",
    "budget_exceeded": "the context budget could not be met",
    "max_steps": "the loop ran out of steps",
    "error": "the loop stopped on an error",
}

# ----- cursor context in half-typed JSON -------------------------------------------------------

JsonPath = tuple[str | int, ...]
ContextKind = Literal["key", "value", "none"]


@dataclass
class _Frame:
    kind: str
    path: JsonPath
    start: int
    state: str = "key"
    key: str | None = None
    index: int = 0
    keys: list[str] = field(default_factory=list)
    scalars: dict[str, Any] = field(default_factory=dict)
    end: int | None = None


@dataclass
class CursorContext:
    """Where the cursor is, read lexically so it works in invalid JSON.

    ``kind`` is ``key`` when a member name belongs at the cursor (``path`` is the object's
    path), ``value`` when a value does (``path`` is the value's path). ``token_start`` /
    ``token_end`` are the bytes a completion replaces (the whole string with its quotes, or a
    bare half-typed word); both equal the cursor when nothing is typed yet.
    """

    kind: ContextKind
    path: JsonPath
    offset: int
    token_start: int
    token_end: int
    prefix: str = ""
    text: str | None = None
    in_string: bool = False
    present_keys: list[str] = field(default_factory=list)
    objects: dict[JsonPath, dict[str, Any]] = field(default_factory=dict)
    needs_comma: bool = False

    def object_scalars(self, path: JsonPath) -> dict[str, Any]:
        """String/number members of the open object at ``path`` (also those after the cursor)."""
        return self.objects.get(path, {})


_WS = b" \t\r\n"
_BARE = re.compile(rb"[A-Za-z0-9_.+\-$:/*]+")


def _string_end(data: bytes, i: int) -> tuple[int, bool]:
    """(index just past the string token starting at ``i``, closed?); stops at a newline."""
    j = i + 1
    n = len(data)
    while j < n:
        c = data[j]
        if c == 0x5C:  # backslash
            j += 2
            continue
        if c == 0x22:
            return j + 1, True
        if c == 0x0A:
            return j, False
        j += 1
    return n, False


def _decode_string(raw: bytes) -> str:
    try:
        value = json.loads(raw)
        return value if isinstance(value, str) else ""
    except ValueError:
        return raw.decode("utf-8", errors="replace").strip('"')


def cursor_context(data: bytes, offset: int, *, hover: bool = False) -> CursorContext:
    """Read the document up to (and past) ``offset`` and say what belongs at the cursor.

    A tolerant lexical scan, not a parse: strings, punctuation and bare words move a stack
    of open objects/arrays, so ``{"graders": [{"name": "endstate.evals.graders:co`` still
    says "the value of graders[0].name". ``hover=True`` treats the character *under* the
    cursor as the one asked about (LSP hover semantics) instead of the gap before it.
    """
    offset = max(0, min(offset, len(data)))
    stack: list[_Frame] = []
    snap: CursorContext | None = None
    snap_frames: list[_Frame] = []
    cursor_key_frame: _Frame | None = None

    def context_here(start: int, end: int, prefix: str, text: str | None, in_str: bool) -> None:
        nonlocal snap, snap_frames
        snap_frames = list(stack)
        if not stack:
            snap = CursorContext("value", (), offset, start, end, prefix, text, in_str)
            return
        top = stack[-1]
        if top.kind == "object":
            if top.state in ("key", "after"):
                snap = CursorContext("key", top.path, offset, start, end, prefix, text, in_str)
                snap.needs_comma = top.state == "after" and bool(top.keys)
            elif top.state == "value":
                path = (*top.path, top.key or "")
                snap = CursorContext("value", path, offset, start, end, prefix, text, in_str)
            else:
                snap = CursorContext("none", top.path, offset, start, end, prefix, text, in_str)
        else:
            path = (*top.path, top.index)
            snap = CursorContext("value", path, offset, start, end, prefix, text, in_str)

    def value_done() -> None:
        if stack:
            stack[-1].state = "after"

    def child_path() -> JsonPath:
        if not stack:
            return ()
        top = stack[-1]
        if top.kind == "object":
            return (*top.path, top.key or "")
        return (*top.path, top.index)

    i, n = 0, len(data)
    while i < n:
        c = data[i]
        if snap is None and i >= offset:
            context_here(offset, offset, "", None, False)
        if c in _WS:
            i += 1
            continue
        if c == 0x22:
            end, closed = _string_end(data, i)
            inner_end = end - 1 if closed else end
            inside = (i <= offset < end) if hover else (i < offset <= inner_end)
            raw = data[i:end] if closed else data[i:end] + b'"'
            text = _decode_string(raw)
            if snap is None and inside:
                prefix = (
                    data[i + 1 : offset].decode("utf-8", errors="replace") if offset > i else ""
                )
                context_here(i, end, prefix, text, True)
            top = stack[-1] if stack else None
            if top is not None and top.kind == "object" and top.state in ("key", "after", "colon"):
                top.key = text
                top.keys.append(text)
                top.state = "colon"
                if snap is not None and snap.in_string and snap.token_start == i:
                    cursor_key_frame = top
            elif top is not None and top.kind == "object" and top.state == "value":
                if top.key is not None:
                    top.scalars[top.key] = text
                value_done()
            else:
                value_done()
            i = end
            continue
        if c in (0x7B, 0x5B):  # { [
            frame = _Frame("object" if c == 0x7B else "array", child_path(), i)
            frame.state = "key" if c == 0x7B else "value"
            stack.append(frame)
            i += 1
            continue
        if c in (0x7D, 0x5D):  # } ]
            want = "object" if c == 0x7D else "array"
            if stack and stack[-1].kind == want:
                stack.pop().end = i + 1
                value_done()
            i += 1
            continue
        if c == 0x3A:  # :
            if stack and stack[-1].kind == "object":
                stack[-1].state = "value"
            i += 1
            continue
        if c == 0x2C:  # ,
            if stack:
                top = stack[-1]
                if top.kind == "object":
                    top.state, top.key = "key", None
                else:
                    top.index += 1
                    top.state = "value"
            i += 1
            continue
        match = _BARE.match(data, i)
        if match is None:
            i += 1
            continue
        end = match.end()
        word = match.group().decode("utf-8", errors="replace")
        inside = (i <= offset < end) if hover else (i < offset <= end)
        if snap is None and inside:
            context_here(i, end, data[i:offset].decode("utf-8", errors="replace"), word, False)
        top = stack[-1] if stack else None
        if top is not None and top.kind == "object" and top.state == "value" and top.key:
            try:
                top.scalars[top.key] = json.loads(word)
            except ValueError:
                top.scalars[top.key] = word
        if top is not None and top.kind == "object" and top.state in ("key", "after"):
            pass  # a half-typed unquoted key: nothing to record
        else:
            value_done()
        i = end
    if snap is None:
        context_here(offset, offset, "", None, False)
    assert snap is not None
    for frame in snap_frames:
        if frame.kind == "object":
            snap.objects[frame.path] = frame.scalars
    if snap_frames and snap_frames[-1].kind == "object":
        keys = list(snap_frames[-1].keys)
        if cursor_key_frame is snap_frames[-1] and snap.text in keys:
            keys.remove(snap.text)
        snap.present_keys = keys
    return snap


# ----- graders (static catalogue) --------------------------------------------------------------


@dataclass(frozen=True)
class ParamView:
    name: str
    annotation: str
    default: str | None
    required: bool


@dataclass(frozen=True)
class GraderView:
    """What the editor needs to know about one grader, from the static catalogue."""

    name: str
    params: tuple[ParamView, ...]
    doc: str
    file: Path | None
    line: int
    column: int

    @property
    def signature(self) -> str:
        parts = ["sandbox"]
        if self.params:
            parts.append("*")
        for p in self.params:
            text = f"{p.name}: {p.annotation}" if p.annotation else p.name
            if p.default is not None:
                text += f" = {p.default}"
            parts.append(text)
        func = self.name.split(":")[-1]
        return f"def {func}({', '.join(parts)}) -> Verdict"

    @property
    def required(self) -> list[ParamView]:
        return [p for p in self.params if p.required]


def _view(info: Any, name: str) -> GraderView:
    params = []
    for p in getattr(info, "params", []) or []:
        pname = str(getattr(p, "name", ""))
        if pname == "sandbox" or str(getattr(p, "kind", "")).upper().startswith("VAR_"):
            continue
        default = getattr(p, "default", None)
        params.append(
            ParamView(
                name=pname,
                annotation=str(getattr(p, "annotation", "") or ""),
                default=None if default is None else str(default),
                required=bool(getattr(p, "required", False)),
            )
        )
    file = getattr(info, "file", None)
    return GraderView(
        name=name,
        params=tuple(params),
        doc=str(getattr(info, "doc", "") or ""),
        file=Path(file) if file else None,
        line=int(getattr(info, "line", 1) or 1),
        column=int(getattr(info, "column", 1) or 1),
    )


class Graders:
    """The graders a task can name, looked up statically (never imported)."""

    def __init__(self, catalogue: Any | None) -> None:
        self.catalogue = catalogue

    @classmethod
    def for_task(
        cls, root: Path, suite_root: Path | None = None, config: Config | None = None
    ) -> Graders:
        try:
            from endstate_author.catalogue import Catalogue
            from endstate_author.config import Config as _Config

            cat = Catalogue.for_task(root, suite_root or root.parent, config or _Config())
        except Exception:
            cat = None
        return cls(cat)

    def resolve(self, name: str) -> GraderView | None:
        if self.catalogue is None or not name:
            return None
        try:
            info = self.catalogue.resolve(name)
        except Exception:
            return None
        return _view(info, name) if info is not None else None

    def all(self) -> list[GraderView]:
        if self.catalogue is None:
            return []
        try:
            infos = list(self.catalogue.all_graders())
        except Exception:
            return []
        out = []
        for info in infos:
            name = str(getattr(info, "name", "") or "")
            if not name:
                module = getattr(info, "module", "")
                name = f"{module}:{getattr(info, 'function', '')}"
            out.append(_view(info, name))
        return out


def short_name(name: str) -> str:
    """``module:function`` → ``function`` (also for the last-dot form)."""
    if ":" in name:
        return name.rsplit(":", 1)[1]
    return name.rsplit(".", 1)[-1]


# ----- completion ------------------------------------------------------------------------------

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


def _fields(model: type[BaseModel]) -> list[tuple[str, str, str]]:
    """(json key, type text, description) for each field of ``model``."""
    out = []
    for name, info in model.model_fields.items():
        key = info.alias or name
        ann = getattr(info.annotation, "__name__", None) or str(info.annotation)
        ann = ann.replace("typing.", "").replace("Annotated[", "").replace("NoneType", "None")
        out.append((key, ann, info.description or ""))
    return out


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


def _bound_text(ann: str) -> str:
    return ann


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
    for key, ann, desc in _fields(model):
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
    arg = _arg_of(path)
    if arg is not None and arg in PATH_ARGS:
        return _path_items(root, ctx, arg)
    return []


def _object_has_key(ctx: CursorContext, path: JsonPath, key: str) -> bool:
    return key in ctx.object_scalars(path) or (
        ctx.path[: len(path)] == path and key in ctx.present_keys
    )


def _arg_of(path: JsonPath) -> str | None:
    """The argument name when ``path`` is (graders, i, args, NAME[, j])."""
    if len(path) >= 4 and path[0] == "graders" and path[2] == "args" and isinstance(path[3], str):
        if len(path) == 4 or (len(path) == 5 and isinstance(path[4], int)):
            return path[3]
    return None


def fixture_paths(root: Path, limit: int = 5000) -> tuple[list[str], list[str]]:
    """(files, folders) of the fixture by forward-slash relative path, pruned names skipped."""
    from endstate_author.context import walk_tree
    from endstate_harness.task import PRUNED_NAMES

    files: list[str] = []
    folders: list[str] = []
    for rel, entry in walk_tree(root / FIXTURE_DIR, max_entries=limit).items():
        if any(part in PRUNED_NAMES for part in rel.split("/")):
            continue
        (folders if entry.is_dir else files).append(rel)
    return sorted(files), sorted(folders)


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


# ----- hover ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class HoverInfo:
    markdown: str
    start: int
    end: int


def hover(
    root: Path, data: bytes, offset: int, *, graders: Graders | None = None
) -> HoverInfo | None:
    """What the key, grader name, argument, counter or enum value under the cursor means."""
    if len(data) > MAX_DOCUMENT_BYTES:
        return None
    ctx = cursor_context(data, offset, hover=True)
    if ctx.text is None:
        return None
    text = ctx.text
    cat = graders or Graders(None)
    md: str | None = None
    if ctx.kind == "key":
        md = _hover_key(ctx.path, text, ctx, cat)
    elif ctx.kind == "value":
        path = ctx.path
        if len(path) == 3 and path[0] == "graders" and path[2] == "name":
            view = cat.resolve(text)
            md = _grader_md(view) if view else f"`{text}`: no such grader was found (ES202)"
        elif path == ("category",) and text in CATEGORY_TEXT:
            md = f"**{text}**: {CATEGORY_TEXT[text]}"
        elif path == ("requires", "stop_reason") and text in STOP_REASON_TEXT:
            md = f"**{text}**: {STOP_REASON_TEXT[text]}"
    if md is None:
        return None
    return HoverInfo(md, ctx.token_start, ctx.token_end)


def _grader_md(view: GraderView) -> str:
    doc = view.doc.strip()
    return f"```python\n{view.signature}\n```\n\n`{view.name}`" + (f"\n\n{doc}" if doc else "")


def _hover_key(path: JsonPath, key: str, ctx: CursorContext, cat: Graders) -> str | None:
    if len(path) == 3 and path[0] == "graders" and path[2] == "args":
        name = ctx.object_scalars(path[:2]).get("name")
        view = cat.resolve(name) if isinstance(name, str) else None
        if view is None:
            return None
        for p in view.params:
            if p.name == key:
                need = "required" if p.required else f"default `{p.default}`"
                return f"**{key}**: `{p.annotation}` ({need})\n\nargument of `{view.name}`"
        return None
    if path == ("requires",) and key in COUNTERS:
        return (
            f"**{key}**: a bound `{{min?, max?}}` (inclusive) on {COUNTERS[key]}.\n\n"
            "The runner checks it after the run and conjoins it with the graders."
        )
    model = model_at(path)
    if model is None:
        return None
    for fkey, ann, desc in _fields(model):
        if fkey == key:
            extra = ""
            if key == "category":
                extra = "\n\n" + "\n".join(f"- `{c}`: {t}" for c, t in CATEGORY_TEXT.items())
            return f"**{key}** (`{ann}`): {desc}{extra}"
    return None


# ----- definition and links ---------------------------------------------------------------------


@dataclass(frozen=True)
class Location:
    """A target in another file: 1-based line/column (characters) as the catalogue gives them."""

    file: Path
    line: int = 1
    column: int = 1


def definition(
    root: Path, data: bytes, offset: int, *, graders: Graders | None = None
) -> Location | None:
    """A grader name → its ``def``; a path argument → the fixture (or solution) file."""
    if len(data) > MAX_DOCUMENT_BYTES:
        return None
    ctx = cursor_context(data, offset, hover=True)
    if ctx.kind != "value" or ctx.text is None:
        return None
    path = ctx.path
    if len(path) == 3 and path[0] == "graders" and path[2] == "name":
        view = (graders or Graders(None)).resolve(ctx.text)
        if view is None or view.file is None:
            return None
        return Location(view.file, view.line, view.column)
    arg = _arg_of(path)
    if arg in PATH_ARGS:
        target = _path_target(root, ctx.text)
        return Location(target) if target else None
    return None


def _path_target(root: Path, rel: str) -> Path | None:
    if not rel or rel.startswith("/") or ".." in rel.split("/") or any(c in rel for c in "*?["):
        return None
    for tree in (FIXTURE_DIR, SOLUTION_DIR, HOLDOUT_DIR):
        candidate = root / tree / rel
        if candidate.exists() and not candidate.is_symlink():
            return candidate
    return None


@dataclass(frozen=True)
class DocumentLink:
    start: int
    end: int
    target: Path
    tooltip: str


def document_links(root: Path, data: bytes) -> list[DocumentLink]:
    """Every path argument that names an existing file, linked to it."""
    from endstate_author.jsonpos import parse

    if len(data) > MAX_DOCUMENT_BYTES:
        return []
    doc = parse(data)
    graders = doc.node_at_path(("graders",))
    links: list[DocumentLink] = []
    if graders is None or graders.kind != "array":
        return links
    for entry in graders.items:
        args = entry.get("args") if entry.kind == "object" else None
        if args is None or args.kind != "object":
            continue
        for pair in args.pairs:
            if pair.key not in PATH_ARGS or pair.value is None:
                continue
            nodes = pair.value.items if pair.value.kind == "array" else [pair.value]
            for node in nodes:
                if node.kind != "string" or not isinstance(node.value, str):
                    continue
                target = _path_target(root, node.value)
                if target is not None and target.is_file():
                    tree = target.relative_to(root).parts[0]
                    links.append(
                        DocumentLink(
                            node.start + 1, node.end - 1, target, f"open {tree}/{node.value}"
                        )
                    )
    return links


# ----- outline -----------------------------------------------------------------------------------


@dataclass
class Symbol:
    name: str
    detail: str
    kind: Literal["array", "object", "function", "property", "number", "string"]
    start: int
    end: int
    select_start: int
    select_end: int
    children: list[Symbol] = field(default_factory=list)


def document_symbols(data: bytes) -> list[Symbol]:
    """Outline: the graders (with their args) and the requires bounds, then the other keys."""
    from endstate_author.jsonpos import parse

    if len(data) > MAX_DOCUMENT_BYTES:
        return []
    doc = parse(data)
    root = doc.root
    if root is None or root.kind != "object":
        return []
    out: list[Symbol] = []
    for pair in root.pairs:
        value = pair.value
        end = value.end if value else pair.end
        sym = Symbol(
            pair.key,
            "",
            "property",
            pair.start,
            max(end, pair.key_node.end),
            pair.key_node.start,
            pair.key_node.end,
        )
        if pair.key == "graders" and value is not None and value.kind == "array":
            sym.kind = "array"
            sym.detail = f"{len(value.items)} graders"
            for i, item in enumerate(value.items):
                name_node = item.get("name") if item.kind == "object" else None
                name = (
                    name_node.value
                    if name_node is not None and isinstance(name_node.value, str)
                    else f"[{i}]"
                )
                args = item.get("args") if item.kind == "object" else None
                sel = name_node or item
                child = Symbol(
                    short_name(name), name, "function", item.start, item.end, sel.start, sel.end
                )
                if args is not None and args.kind == "object":
                    for ap in args.pairs:
                        v = ap.value
                        child.children.append(
                            Symbol(
                                ap.key,
                                _short_json(v.to_python() if v else None),
                                "property",
                                ap.start,
                                max(ap.end, v.end if v else ap.end),
                                ap.key_node.start,
                                ap.key_node.end,
                            )
                        )
                sym.children.append(child)
        elif pair.key == "requires" and value is not None and value.kind == "object":
            sym.kind = "object"
            for rp in value.pairs:
                v = rp.value
                py = v.to_python() if v else None
                detail = _bound_detail(py) if isinstance(py, dict) else _short_json(py)
                sym.children.append(
                    Symbol(
                        rp.key,
                        detail,
                        "number" if isinstance(py, dict) else "string",
                        rp.start,
                        max(rp.end, v.end if v else rp.end),
                        rp.key_node.start,
                        rp.key_node.end,
                    )
                )
        elif value is not None:
            sym.detail = _short_json(value.to_python())
            sym.kind = "object" if value.kind == "object" else "property"
        out.append(sym)
    return out


def _bound_detail(bound: dict[str, Any]) -> str:
    lo, hi = bound.get("min"), bound.get("max")
    if lo is not None and hi is not None:
        return f"{lo}..{hi}"
    if lo is not None:
        return f">= {lo}"
    if hi is not None:
        return f"<= {hi}"
    return "any value"


def _short_json(value: Any, limit: int = 60) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"


# ----- code actions ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Action:
    """A code action: edits in byte offsets per file, files to create, the findings it fixes."""

    title: str
    kind: Literal["quickfix", "source.fixAll", "refactor.rewrite"]
    edits: tuple[TextEdit, ...] = ()
    creates: tuple[FileCreate, ...] = ()
    diagnostics: tuple[Diagnostic, ...] = ()
    preferred: bool = False


def _creatable(path: Path) -> bool:
    return not path.exists() and not path.is_symlink()


def fix_for(diag: Diagnostic) -> Fix | None:
    """The diagnostic's own fix, or the editor's: an empty ``__init__.py`` for ES406."""
    if diag.fix is not None:
        return diag.fix
    if diag.code == "ES406" and diag.file.name == "__init__.py" and _creatable(diag.file):
        return Fix(
            f"create {diag.file.parent.name}/__init__.py", creates=(FileCreate(diag.file, ""),)
        )
    return None


def quick_fixes(diagnostics: Iterable[Diagnostic]) -> list[Action]:
    """Every fix a finding carries, as a quick fix attached to that finding."""
    out = []
    for diag in diagnostics:
        fix = fix_for(diag)
        if fix is None:
            continue
        creates = tuple(c for c in fix.creates if _creatable(c.file))
        if not fix.edits and not creates:
            continue
        out.append(Action(fix.title, "quickfix", fix.edits, creates, (diag,), preferred=fix.safe))
    return out


def fix_all(diagnostics: Sequence[Diagnostic]) -> Action | None:
    """``source.fixAll``: every *safe* fix that does not overlap another, as one action."""
    chosen: list[tuple[Diagnostic, Fix]] = []
    taken: dict[Path, list[tuple[int, int]]] = {}
    created: set[Path] = set()
    for diag in sorted(diagnostics, key=Diagnostic.sort_key):
        fix = fix_for(diag)
        if fix is None or not fix.safe:
            continue
        spans = [(e.file, e.start, e.end) for e in fix.edits]
        if any(
            (s < e2 and s2 < e) or s == s2 == e == e2
            for f, s, e in spans
            for s2, e2 in taken.get(f, [])
        ):
            continue
        if any(c.file in created or not _creatable(c.file) for c in fix.creates):
            continue
        for f, s, e in spans:
            taken.setdefault(f, []).append((s, e))
        created.update(c.file for c in fix.creates)
        chosen.append((diag, fix))
    if not chosen:
        return None
    return Action(
        title=f"Fix all safe findings ({len(chosen)})",
        kind="source.fixAll",
        edits=tuple(e for _, f in chosen for e in f.edits),
        creates=tuple(c for _, f in chosen for c in f.creates),
        diagnostics=tuple(d for d, _ in chosen),
    )


_TEST_FILE = re.compile(r"(^|/)(test_[^/]*|[^/]*_test)\.py$")


def mandatory_assertions(root: Path, data: bytes) -> Action | None:
    """ "Add the missing mandatory assertions": append the guide's four graders that are absent.

    The four (authoring guide): run the tests (``command_succeeds`` or ``tests_pass``), pin
    the fixture's test files (``files_unchanged``), ``no_new_skips`` and
    ``changed_paths_within`` — the last three are implied by ``tree_unchanged``. Only
    offered when task.json is valid and ``graders`` is an array, so the insertion is exact.
    """
    from endstate_author.jsonpos import parse

    if len(data) > MAX_DOCUMENT_BYTES:
        return None
    doc = parse(data)
    if doc.error is not None or doc.root is None or doc.root.kind != "object":
        return None
    graders = doc.root.get("graders")
    if graders is None or graders.kind != "array":
        return None
    names = set()
    for item in graders.items:
        node = item.get("name") if item.kind == "object" else None
        if node is not None and isinstance(node.value, str):
            names.add(short_name(node.value))
    files, _folders = fixture_paths(root)
    tests = [f for f in files if _TEST_FILE.search(f)]
    missing: list[dict[str, Any]] = []
    if not names & {"command_succeeds", "tests_pass"}:
        command = "python -m unittest discover -s tests -t . -q"
        test_dirs = sorted({t.rsplit("/", 1)[0] for t in tests if "/" in t})
        if test_dirs and "tests" not in test_dirs:
            command = f"python -m unittest discover -s {test_dirs[0]} -t . -q"
        missing.append(
            {"name": f"{REFERENCE_MODULE}:command_succeeds", "args": {"command": command}}
        )
    if "tree_unchanged" not in names:
        if "files_unchanged" not in names and tests:
            missing.append(
                {"name": f"{REFERENCE_MODULE}:files_unchanged", "args": {"paths": tests}}
            )
        if "no_new_skips" not in names:
            missing.append({"name": f"{REFERENCE_MODULE}:no_new_skips"})
        if "changed_paths_within" not in names:
            missing.append(
                {
                    "name": f"{REFERENCE_MODULE}:changed_paths_within",
                    "args": {"allowed": _allowed_patterns(root, tests)},
                }
            )
    if not missing:
        return None
    insert_at, text = _array_append(data, graders, [json.dumps(m) for m in missing])
    manifest = root / TASK_FILE
    return Action(
        title="Add the missing mandatory assertions "
        f"({', '.join(short_name(m['name']) for m in missing)})",
        kind="quickfix",
        edits=(TextEdit(manifest, insert_at, insert_at, text),),
    )


def _allowed_patterns(root: Path, tests: list[str]) -> list[str]:
    """Folders the solution touches (as ``dir/*``), else the fixture's non-test top folders."""
    from endstate_author.context import walk_tree

    changed = [rel for rel, e in walk_tree(root / SOLUTION_DIR).items() if not e.is_dir]
    source = changed or [
        f for f in fixture_paths(root)[0] if f not in tests and not _TEST_FILE.search(f)
    ]
    patterns = sorted({(rel.split("/", 1)[0] + "/*") if "/" in rel else rel for rel in source})
    return patterns or ["*.md"]


def _array_append(data: bytes, array: Any, items: list[str]) -> tuple[int, str]:
    """Where and what to insert to append ``items`` to ``array``, matching its indentation."""
    close = array.end - 1
    if array.items:
        last = array.items[-1]
        line_start = data.rfind(b"\n", 0, last.start) + 1
        indent = data[line_start : last.start].decode("utf-8", errors="replace")
        if indent.strip():
            return last.end, "".join(f", {item}" for item in items)
        return last.end, "".join(f",\n{indent}{item}" for item in items)
    line_start = data.rfind(b"\n", 0, array.start) + 1
    base = re.match(rb"[ \t]*", data[line_start:]).group().decode()  # type: ignore[union-attr]
    inner = base + "  "
    body = ",\n".join(f"{inner}{item}" for item in items)
    return close, f"\n{body}\n{base}"


# ----- position helpers for the server -----------------------------------------------------------


def utf16_column(line_text: str, char_column: int) -> int:
    """A 0-based character column on ``line_text`` in UTF-16 code units."""
    prefix = line_text[: max(0, char_column)]
    return len(prefix.encode("utf-16-le")) // 2


def task_root_of(path: Path) -> Path | None:
    """The task folder a file belongs to: the nearest ancestor (or itself) holding task.json."""
    for folder in (path, *path.parents) if path.is_dir() else path.parents:
        if (folder / TASK_FILE).is_file():
            return folder
    return None
