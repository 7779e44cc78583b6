"""JSON with positions: every node of task.json knows its exact byte range."""

from __future__ import annotations

import gc
import json
import re
import sys
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from endstate_author.engine.lineindex import LineIndex

MAX_DEPTH = 200
"""Nesting deeper than this is refused with a diagnostic (a task.json is never that deep)."""


class JsonSyntaxError(ValueError):
    """Invalid JSON: ``offset`` is the byte offset of the problem, ``message`` says what."""

    def __init__(self, message: str, offset: int, end: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.offset = offset
        self.end = offset if end is None else end


@dataclass(slots=True, eq=False)
class JPair:
    key: str
    key_node: JNode
    value: JNode | None
    start: int
    end: int


@dataclass(slots=True, eq=False)
class JNode:
    """One JSON value. ``kind`` is object, array, string, number, true, false, null or error."""

    kind: str
    start: int
    end: int
    value: Any = None
    pairs: list[JPair] = field(default_factory=list)
    items: list[JNode] = field(default_factory=list)
    _index: dict[str, JPair] | None = None

    def get(self, key: str) -> JNode | None:
        """The value of the *last* member named ``key`` (what ``json`` would keep)."""
        pair = self.pair(key)
        return pair.value if pair is not None else None

    def pair(self, key: str) -> JPair | None:
        """The *last* member named ``key``. Indexed on first use (a parsed tree is never
        changed), so an object with thousands of members costs linear time, not quadratic."""
        if self._index is None:
            self._index = {p.key: p for p in self.pairs}
        return self._index.get(key)

    def to_python(self) -> Any:
        """The value as ``json.loads`` gives it (the last of duplicate keys wins).

        Built without recursion: a manifest nested up to ``MAX_DEPTH`` levels must convert
        whatever the caller's own stack depth (a language server's handler, a test runner)."""
        if self.kind not in ("object", "array"):
            return self.value
        top: Any = {} if self.kind == "object" else []
        stack: list[tuple[JNode, Any]] = [(self, top)]
        while stack:
            node, out = stack.pop()
            members = (
                [(p.key, p.value) for p in node.pairs]
                if node.kind == "object"
                else list(enumerate(node.items))
            )
            for key, child in members:
                value: Any = None
                if child is not None:
                    if child.kind in ("object", "array"):
                        value = {} if child.kind == "object" else []
                        stack.append((child, value))
                    else:
                        value = child.value
                if node.kind == "object":
                    out[key] = value
                else:
                    out.append(value)
        return top


@lru_cache(maxsize=1)
def _parser() -> Any:
    # tree-sitter is only the fallback for invalid JSON: a valid manifest never loads it
    import tree_sitter_json  # deferred: ~11 ms of start-up saved in the common, valid case
    from tree_sitter import Language, Parser  # deferred, as above

    return Parser(Language(tree_sitter_json.language()))


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


@dataclass
class JsonDocument:
    """A parsed task.json: its bytes, tree, value and (if invalid) first syntax error."""

    data: bytes
    root: JNode | None
    error: JsonSyntaxError | None
    index: LineIndex

    @property
    def value(self) -> Any:
        return self.root.to_python() if self.root is not None else None

    def node_at_path(self, path: tuple[str | int, ...]) -> JNode | None:
        node = self.root
        for part in path:
            if node is None:
                return None
            if isinstance(part, int):
                node = node.items[part] if node.kind == "array" and part < len(node.items) else None
            else:
                node = node.get(part) if node.kind == "object" else None
        return node

    def pair_at_path(self, path: tuple[str | int, ...]) -> JPair | None:
        if not path or not isinstance(path[-1], str):
            return None
        parent = self.node_at_path(path[:-1])
        if parent is None or parent.kind != "object":
            return None
        return parent.pair(path[-1])


def _check_encoding(data: bytes) -> JsonSyntaxError | None:
    if not data.strip():
        return JsonSyntaxError("the file is empty", 0)
    if data.startswith(b"\xef\xbb\xbf"):
        return JsonSyntaxError(
            "the file starts with a byte-order mark (BOM); save it as UTF-8 without one", 0, 3
        )
    if b"\x00" in data[:8192]:
        return JsonSyntaxError(
            "the file is binary (it holds NUL bytes), not JSON text", data.find(b"\x00")
        )
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return JsonSyntaxError(
            f"the file is not UTF-8 (byte {data[exc.start]:#04x} at offset {exc.start})",
            exc.start,
            exc.start + 1,
        )
    return None


def _previous(text: str, pos: int) -> int:
    """The index of the last non-blank character before ``pos`` (-1 when none)."""
    i = pos - 1
    while i >= 0 and text[i] in " \t\r\n":
        i -= 1
    return i


def explain_decode_error(text: str, msg: str, pos: int) -> tuple[str, int, int]:
    """The decoder's message as the likely cause, at the place to fix: ``(message, start,
    end)`` in characters. "Expecting value" at a ``]`` is a trailing comma, shown at the comma;
    "Expecting ',' delimiter" is a missing comma, shown just after the value it should follow.
    """
    here = text[pos : pos + 1]
    before = _previous(text, pos)
    if text[pos : pos + 2] in ("//", "/*"):
        return "a comment: JSON has no comments, remove it", pos, pos + 2
    if msg.startswith(("Expecting value", "Expecting property name")) and here in ("]", "}"):
        if before >= 0 and text[before] == ",":
            return (
                f"a trailing comma before '{here}' (JSON allows none): remove this comma",
                before,
                before + 1,
            )
    if msg.startswith("Expecting ',' delimiter") and before >= 0:
        return (
            "a missing comma: add ',' after this value, before the next "
            + ("key" if here == '"' and _in_object(text, pos) else "item"),
            before,
            before + 1,
        )
    if msg.startswith("Expecting property name") and here == "'":
        return "a key in single quotes: JSON needs double quotes", pos, pos + 1
    if msg.startswith("Expecting value") and here == "'":
        return "a string in single quotes: JSON needs double quotes", pos, pos + 1
    if msg.startswith("Invalid control character") and here:
        escape = _ESCAPES.get(here, f"\\u{ord(here):04x}")
        name = _CONTROL_NAMES.get(here, f"control character U+{ord(here):04X}")
        if here == "\n":  # most often a string whose closing quote is missing
            return (f"a line break inside a string: close the string with '\"' before it, "
                    f"or write {escape}", pos, pos + 1)  # fmt: skip
        return f"a raw {name} inside a string: JSON needs it escaped, write {escape}", pos, pos + 1
    if msg.startswith("Unterminated string"):
        return 'a string that is never closed: add its closing \'"\'', pos, pos + 1
    if msg.endswith(" at"):
        # the decoder's "…at" is followed by the position only in str(exc): say where
        line = text.count("\n", 0, pos) + 1
        column = pos - (text.rfind("\n", 0, pos) + 1) + 1
        return f"{msg} line {line}, column {column}", pos, pos + 1
    return msg, pos, pos + 1


_ESCAPES = {"\t": "\\t", "\n": "\\n", "\r": "\\r", "\b": "\\b", "\f": "\\f"}
_CONTROL_NAMES = {"\t": "tab", "\n": "line break", "\r": "carriage return"}


def _in_object(text: str, pos: int) -> bool:
    """Whether ``pos`` sits directly in an object (not an array), by bracket depth."""
    depth: list[str] = []
    in_string = escaped = False
    for ch in text[:pos]:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth.append(ch)
        elif ch in "]}" and depth:
            depth.pop()
    return bool(depth) and depth[-1] == "{"


def _validity(data: bytes) -> JsonSyntaxError | None:
    text = data.decode("utf-8")
    try:
        json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        message, start, end = explain_decode_error(text, exc.msg, exc.pos)
        offset = len(text[:start].encode("utf-8"))
        return JsonSyntaxError(message, offset, len(text[:end].encode("utf-8")))
    except ValueError as exc:
        return JsonSyntaxError(str(exc), 0)
    except RecursionError:
        return JsonSyntaxError(f"nesting is deeper than {MAX_DEPTH} levels", 0)
    return None


def _ensure_headroom(frames: int) -> None:
    """Raise the recursion limit when fewer than ``frames`` stack frames are left below it.

    The reader (and ``json`` in C, which counts against the same limit) recurses once or
    twice per nesting level, at most ``MAX_DEPTH`` levels: bounded, but a caller already deep
    in its own stack (a language-server handler, a test runner) would otherwise see a sound
    document fail as "too deep" or a rule crash (ES000), depending on where it was called from.
    The limit is only ever raised, by what the bounded depth needs."""
    depth = 0
    frame = sys._getframe()
    while frame is not None:
        depth += 1
        frame = frame.f_back  # type: ignore[assignment]
    if sys.getrecursionlimit() < depth + frames:
        sys.setrecursionlimit(depth + frames)


def parse(data: bytes | str) -> JsonDocument:
    """Parse task.json bytes. Never raises: problems come back in ``error``."""
    _ensure_headroom(4 * MAX_DEPTH + 200)
    if isinstance(data, str):
        data = data.encode("utf-8")
    index = LineIndex(data)
    error = _check_encoding(data)
    if error is not None and error.message.startswith(
        ("the file is binary", "the file is not UTF-8")
    ):
        return JsonDocument(data, None, error, index)
    body = data[3:] if data.startswith(b"\xef\xbb\xbf") else data
    shift = len(data) - len(body)
    if error is None:
        error = _validity(data)
    root: JNode | None
    collecting = gc.isenabled()
    gc.disable()  # a big tree is many small objects and no cycles: collections only cost time
    try:
        root = None
        if error is None:  # valid JSON (the common case): a direct scan, no error recovery needed
            try:
                root = _Scanner(body, shift).document()
            except (IndexError, AttributeError, ValueError):
                root = None  # cannot happen on valid JSON; tree-sitter below is the fallback
        if root is None:
            root = _build_root(_parser().parse(body).root_node, body, shift)
    except _TooDeep as deep:
        return JsonDocument(
            data,
            None,
            JsonSyntaxError(f"nesting is deeper than {MAX_DEPTH} levels", deep.offset),
            index,
        )
    finally:
        if collecting:
            gc.enable()
    return JsonDocument(data, root, error, index)


class _TooDeep(Exception):
    def __init__(self, offset: int) -> None:
        self.offset = offset


_WS = re.compile(rb"[ \t\n\r]*")
_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.S)
_NUMBER = re.compile(rb"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_LITERALS = {0x74: (b"true", "true", True), 0x66: (b"false", "false", False),
             0x6E: (b"null", "null", None)}  # fmt: skip


class _Scanner:
    """Positions for *valid* JSON by direct scanning: the same nodes and ranges tree-sitter
    gives, at a fraction of the cost for big documents (tree-sitter stays for invalid text,
    where its error recovery is what the editor needs)."""

    def __init__(self, body: bytes, shift: int) -> None:
        self.body = body
        self.shift = shift

    def ws(self, pos: int) -> int:
        return _WS.match(self.body, pos).end()  # type: ignore[union-attr]

    def document(self) -> JNode:
        node, _ = self.value(self.ws(0), 0)
        return node

    def value(self, pos: int, depth: int) -> tuple[JNode, int]:
        if depth > MAX_DEPTH:
            raise _TooDeep(pos + self.shift)
        body, shift = self.body, self.shift
        c = body[pos]
        if c == 0x22:  # "
            m = _STRING.match(body, pos)
            assert m is not None
            return JNode("string", pos + shift, m.end() + shift, _scalar(m.group())), m.end()
        if c == 0x7B:  # {
            obj = JNode("object", pos + shift, 0)
            pos = self.ws(pos + 1)
            if body[pos] != 0x7D:
                while True:
                    key, pos = self.value(pos, depth + 1)
                    pos = self.ws(pos) + 1  # the colon
                    val, pos = self.value(self.ws(pos), depth + 1)
                    obj.pairs.append(JPair(str(key.value), key, val, key.start, val.end))
                    pos = self.ws(pos)
                    if body[pos] != 0x2C:
                        break
                    pos = self.ws(pos + 1)
            obj.end = pos + 1 + shift
            return obj, pos + 1
        if c == 0x5B:  # [
            arr = JNode("array", pos + shift, 0)
            pos = self.ws(pos + 1)
            if body[pos] != 0x5D:
                while True:
                    item, pos = self.value(pos, depth + 1)
                    arr.items.append(item)
                    pos = self.ws(pos)
                    if body[pos] != 0x2C:
                        break
                    pos = self.ws(pos + 1)
            arr.end = pos + 1 + shift
            return arr, pos + 1
        literal = _LITERALS.get(c)
        if literal is not None:
            end = pos + len(literal[0])
            return JNode(literal[1], pos + shift, end + shift, literal[2]), end
        m = _NUMBER.match(body, pos)
        if m is None:
            raise ValueError(f"unexpected byte at {pos}")
        return JNode("number", pos + shift, m.end() + shift, _scalar(m.group())), m.end()


def _build_root(document: Any, body: bytes, shift: int) -> JNode | None:
    for child in document.named_children:
        if child.type == "comment":
            continue
        if child.type == "ERROR":
            inner = [c for c in child.named_children if c.type in _VALUE_TYPES]
            if inner:
                return _build(inner[0], body, shift, 0)
            continue
        return _build(child, body, shift, 0)
    return None


_VALUE_TYPES = frozenset({"object", "array", "string", "number", "true", "false", "null"})


def _scalar(text: bytes) -> Any:
    if text[:1] == b'"' and b"\\" not in text and len(text) >= 2:
        try:
            return text[1:-1].decode("utf-8")  # the common case: no escapes to decode
        except UnicodeDecodeError:
            return None
    try:
        if text.isdigit():
            return int(text)  # ValueError past sys.get_int_max_str_digits(), as json.loads
        return json.loads(text)
    except ValueError:
        return None


def _build(node: Any, body: bytes, shift: int, depth: int) -> JNode:
    if depth > MAX_DEPTH:
        raise _TooDeep(node.start_byte + shift)
    kind = node.type
    sb, eb = node.start_byte, node.end_byte
    start, end = sb + shift, eb + shift
    if kind == "string" or kind == "number":
        text = body[sb:eb]
        value = _scalar(text)
        if value is None and kind == "string":
            value = text.decode("utf-8", errors="replace").strip('"')
        return JNode(kind, start, end, value)
    if kind == "object":
        obj = JNode("object", start, end)
        pairs = obj.pairs
        for child in node.named_children:
            ctype = child.type
            if ctype == "pair":
                pairs.append(_pair(child, body, shift, depth))
            elif ctype == "ERROR":
                # a half-typed member such as `"key"` or `"key":` with no value
                for s in child.named_children:
                    if s.type == "string":
                        key_node = _build(s, body, shift, depth + 1)
                        pairs.append(
                            JPair(str(key_node.value), key_node, None, key_node.start, key_node.end)
                        )
        return obj
    if kind == "array":
        arr = JNode("array", start, end)
        items = arr.items
        for child in node.named_children:
            if child.type in _VALUE_TYPES:
                items.append(_build(child, body, shift, depth + 1))
        return arr
    if kind == "true":
        return JNode("true", start, end, True)
    if kind == "false":
        return JNode("false", start, end, False)
    if kind == "null":
        return JNode("null", start, end, None)
    return JNode("error", start, end)


def _pair(node: Any, body: bytes, shift: int, depth: int) -> JPair:
    named = [c for c in node.named_children if c.type != "comment"]
    key_ts = named[0] if named else None
    value_ts = named[1] if len(named) > 1 else None
    if key_ts is not None and key_ts.type != "string":  # unusual trees: ask by field
        key_ts = node.child_by_field_name("key")
        value_ts = node.child_by_field_name("value")
    sb = node.start_byte + shift
    key_node = (
        _build(key_ts, body, shift, depth + 1) if key_ts is not None else JNode("error", sb, sb)
    )
    value = _build(value_ts, body, shift, depth + 1) if value_ts is not None else None
    key = key_node.value if isinstance(key_node.value, str) else str(key_node.value)
    return JPair(key, key_node, value, sb, node.end_byte + shift)
