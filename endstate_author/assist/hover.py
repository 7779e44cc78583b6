"""Hover in task.json: what the key, grader name, grader argument, ``requires`` counter,
category or stop reason under the cursor means.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from endstate_author.assist.cursor import CursorContext, JsonPath, cursor_context
from endstate_author.assist.grader_views import Graders, GraderView
from endstate_author.assist.vocabulary import (
    CATEGORY_TEXT,
    MAX_DOCUMENT_BYTES,
    STOP_REASON_TEXT,
    model_fields,
)
from endstate_harness.layout import COUNTERS
from endstate_harness.task import model_at


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
    for fkey, ann, desc in model_fields(model):
        if fkey == key:
            extra = ""
            if key == "category":
                extra = "\n\n" + "\n".join(f"- `{c}`: {t}" for c, t in CATEGORY_TEXT.items())
            return f"**{key}** (`{ann}`): {desc}{extra}"
    return None
