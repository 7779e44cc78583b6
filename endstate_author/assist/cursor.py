"""The cursor in a half-typed task.json: which JSON path, and which token, is at a byte offset."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Literal

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


def arg_of(path: JsonPath) -> str | None:
    """The argument name when ``path`` is (graders, i, args, NAME[, j])."""
    if len(path) >= 4 and path[0] == "graders" and path[2] == "args" and isinstance(path[3], str):
        if len(path) == 4 or (len(path) == 5 and isinstance(path[4], int)):
            return path[3]
    return None


def utf16_column(line_text: str, char_column: int) -> int:
    """A 0-based character column on ``line_text`` in UTF-16 code units."""
    prefix = line_text[: max(0, char_column)]
    return len(prefix.encode("utf-16-le")) // 2
