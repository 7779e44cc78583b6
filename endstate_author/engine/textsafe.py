"""Text from an end state or an agent, made safe for where it is shown.

An exception message of the code under test, a child's stderr, a file name in the end state,
a model's words: the toolkit quotes all of them in its output, and none of them may act on
the reader. A terminal obeys escape sequences (a clipboard write, erased lines, a carriage
return that draws a fake "PASS" over a failure); rich obeys ``[markup]``; a Markdown viewer
obeys ``<img>`` and ``[link](...)``; bidirectional overrides show text in an order it does not
have. So every such string leaves the toolkit through one of these functions:

* :func:`shown` — for a terminal, an editor or a log: every control character (C0 but the
  line breaks a caller keeps, DEL, C1), every invisible format character (bidirectional
  overrides and isolates, zero-width characters, tags, the byte-order mark) and the line and
  paragraph separators become a visible escape (``\\x1b``, ``\\u202e``). An escape sequence is
  then only its printable rest after a visible ``\\x1b``: it cannot run.
* :func:`markup` — :func:`shown`, then rich's ``[`` made literal, for a ``console.print``.
* :func:`md_text`, :func:`md_code`, :func:`md_block` — for Markdown: every character that
  can start markup in a line backslash-escaped and ``<``, ``>``, ``&`` as entities, or a code
  span or fenced block whose fence the text cannot close.
* :func:`json_text` — JSON keeps the data exactly (it round-trips), but the characters
  above are written as ``\\uXXXX`` escapes, so the JSON printed on a terminal is safe too.

The module is standalone (standard library only, nothing of the toolkit): every layer that
prints may use it.
"""

from __future__ import annotations

import re
import unicodedata

_UNSAFE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
"""Control, format (bidi, zero-width, tags), lone surrogates, line/paragraph separators."""

_UNSAFE_ABOVE_C0 = (
    "\x7f-\x9f\xad\u0600-\u0605\u061c\u06dd\u070f\u0890-\u0891\u08e2\u180e\u200b-\u200f"
    "\u2028-\u202e\u2060-\u206f\ud800-\udfff\ufeff\ufff0-\ufffb\U000110bd\U000110cd"
    "\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e007f"
)
"""Every character of :data:`_UNSAFE_CATEGORIES` above C0 (Unicode 14, Python 3.11's tables;
the blocks they sit in are taken whole, so a format character a later version adds there is
caught too). Regular expressions, not a lookup per character: a long detail is scanned at C
speed. ``tests/reliability/test_hostile_text.py`` checks them against the running Python's
own tables."""

_UNSAFE = re.compile(f"[\x00-\x1f{_UNSAFE_ABOVE_C0}]")
_UNSAFE_BUT_LINES = re.compile(f"[\x00-\x08\x0b-\x1f{_UNSAFE_ABOVE_C0}]")
"""The same without tab and line feed: what :func:`shown` matches by default."""
_ASCII_UNSAFE_BUT_LINES = re.compile("[\x00-\x08\x0b-\x1f\x7f]")
"""The same for ASCII text (the common case), a small class that scans several times faster."""


def _escape(char: str) -> str:
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def _escape_match(match: re.Match[str]) -> str:
    return _escape(match.group())


def unsafe(char: str) -> bool:
    """Whether ``char`` acts on a display instead of being shown (or is not shown at all)."""
    return unicodedata.category(char) in _UNSAFE_CATEGORIES


def shown(text: str, keep: str = "\n\t") -> str:
    """``text`` with every unsafe character as a visible escape, except those in ``keep``
    (line breaks and tabs by default; ``keep=""`` for one line). A carriage return is never
    kept: it moves the cursor back over what was already written."""
    text = str(text)
    if keep == "\n\t":
        pattern = _ASCII_UNSAFE_BUT_LINES if text.isascii() else _UNSAFE_BUT_LINES
        return pattern.sub(_escape_match, text)

    def one(match: re.Match[str]) -> str:
        char = match.group()
        return char if char in keep and char != "\r" else _escape(char)

    return _UNSAFE.sub(one, text)


def one_line(text: str) -> str:
    """:func:`shown` with line breaks and tabs escaped too: a table cell, a title."""
    return shown(text, keep="")


_RICH_TAG = re.compile(r"(\\*)(\[[a-z#/@][^[]*?])")


def markup(text: str, keep: str = "\n\t") -> str:
    """:func:`shown`, then every ``[...]`` that rich would read as a tag escaped (rich's own
    rule: a ``[`` starting a lowercase name, ``#``, ``/`` or ``@``, up to the next ``]``),
    without importing rich for it."""

    def tag(match: re.Match[str]) -> str:
        backslashes, rest = match.groups()
        return f"{backslashes}{backslashes}\\{rest}"

    safe = _RICH_TAG.sub(tag, shown(text, keep))
    if safe.endswith("\\") and not safe.endswith("\\\\"):
        safe += "\\"  # a trailing backslash would escape the tag rich appends after it
    return safe


_MD_ENTITY = {"<": "&lt;", ">": "&gt;", "&": "&amp;"}
_MD_ACTIVE = re.compile(r"[\\`*_\[\]<>&|~$@#]|(?<![^\W_])(?i:www)\.|:(?=//)|(?<=mailto):"
                        r"|(?<=xmpp):", re.I)
"""What can start markup inside a line: escapes, code, emphasis, links and images (``[``;
without it ``(``/``!`` are plain), HTML and entities, table cells, strikethrough, maths,
autolinks (``scheme://``, ``mailto:``, ``user@host``, ``www.``) and issue references. The
text is never at a line's start (always after a prefix or a cell's bar), so ``-``, ``+``,
``1.`` stay plain."""


def md_text(text: str) -> str:
    """One line of Markdown that renders as exactly ``text`` (made :func:`one_line`): no
    HTML, link, image, emphasis, table cell break or autolink can start in it."""

    def one(match: re.Match[str]) -> str:
        found = match.group()
        if len(found) > 1:  # www.
            return f"{found[:-1]}\\."
        if found == ":":  # a scheme's: http://, mailto:
            return "\\:"
        return _MD_ENTITY.get(found) or f"\\{found}"

    return _MD_ACTIVE.sub(one, one_line(text))


def _fence_for(text: str, least: int) -> str:
    longest = max((len(run) for run in re.findall("`+", text)), default=0)
    return "`" * max(least, longest + 1)


def md_code(text: str, *, in_table: bool = False) -> str:
    """``text`` as an inline code span (one line) whose backticks the text cannot close; in a
    table, ``|`` is escaped as GitHub's tables require even inside a code span."""
    body = one_line(text)
    fence = _fence_for(body, 1)
    if body.startswith(("`", " ")) or body.endswith(("`", " ")):
        body = f" {body} "
    if in_table:
        body = body.replace("|", "\\|")
    return f"{fence}{body}{fence}"


def md_block(text: str, indent: str = "") -> list[str]:
    """``text`` as a fenced code block, every line kept (a traceback stays readable), the
    fence longer than any run of backticks in it, so no line can end the block."""
    body = shown(text, keep="\n\t")
    fence = _fence_for(body, 3)
    lines = (f"{indent}{line}" for line in body.split("\n"))
    return [f"{indent}{fence}", *lines, f"{indent}{fence}"]


def _json_escape(match: re.Match[str]) -> str:
    char = match.group()
    code = ord(char)
    if code < 0x20:  # json.dumps escapes C0 in strings itself; outside them it is layout
        return char
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def json_text(text: str) -> str:
    """JSON text (from ``json.dumps(..., ensure_ascii=False)``) with the unsafe characters
    written as ``\\uXXXX`` escapes. They occur only inside JSON strings, where the escape
    means the same character: the data round-trips unchanged, the terminal sees no control."""
    return _UNSAFE.sub(_json_escape, text)
