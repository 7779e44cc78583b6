"""Output formats for findings: text (rich), json, sarif (2.1.0) and github annotations."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from endstate_author import __version__
from endstate_author.engine import textsafe
from endstate_author.engine.diagnostics import Diagnostic, display_path, read_source_lines

FORMATS = ("text", "json", "sarif", "github")

SARIF_SCHEMA = (
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
)


def dumps(document: object) -> str:
    """JSON text that is valid UTF-8 and safe on a terminal whatever it holds: a file name
    that is not UTF-8 (its bytes are surrogates in a ``str``) is written as ``\\udcff``
    escapes, never as raw bytes, and so are DEL, C1 controls and bidirectional overrides of
    a message quoting the end state (:func:`endstate_author.engine.textsafe.json_text`)."""
    return textsafe.json_text(json.dumps(document, indent=2, ensure_ascii=False))


def to_json(diagnostics: Sequence[Diagnostic]) -> list[dict[str, Any]]:
    return [d.to_json() for d in diagnostics]


def render_json(diagnostics: Sequence[Diagnostic]) -> str:
    return dumps(to_json(diagnostics))


def to_sarif(diagnostics: Sequence[Diagnostic]) -> dict[str, Any]:
    # the rule table imports every rule (~0.3 s), which only SARIF's rule metadata needs; a
    # cached lint printing JSON or text must not pay for it: deferred
    from endstate_author.rules.registry import RULES, load_all

    load_all()
    codes = sorted({d.code for d in diagnostics} | set(RULES))
    index = {code: i for i, code in enumerate(codes)}
    rules = []
    for code in codes:
        rule = RULES.get(code)
        entry: dict[str, Any] = {"id": code}
        if rule is not None:
            entry.update(
                {
                    "name": rule.name,
                    "shortDescription": {"text": rule.summary},
                    "fullDescription": {"text": rule.doc},
                    "defaultConfiguration": {
                        "level": "error" if rule.severity == "error" else "warning"
                    },
                    "helpUri": f"https://endstate-author.invalid/rules/{code}",
                }
            )
        rules.append(entry)
    results = []
    for d in diagnostics:
        results.append(
            {
                "ruleId": d.code,
                "ruleIndex": index[d.code],
                "level": "error" if d.severity == "error" else "warning",
                "message": {"text": d.message},
                "locations": [
                    {
                        "physicalLocation": {
                            "artifactLocation": {"uri": display_path(d.file)},
                            "region": {
                                "startLine": d.line,
                                "startColumn": d.column,
                                "endLine": d.end_line,
                                "endColumn": max(d.end_column, 1),
                            },
                        }
                    }
                ],
            }
        )
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "endstate-author",
                        "version": __version__,
                        "rules": rules,
                    }
                },
                "columnKind": "unicodeCodePoints",
                "results": results,
            }
        ],
    }


def render_sarif(diagnostics: Sequence[Diagnostic]) -> str:
    return dumps(to_sarif(diagnostics))


def _escape_data(text: str) -> str:
    # GitHub's log shows ANSI colours: an escape sequence of the end state is made visible
    text = textsafe.shown(text)
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def render_github(diagnostics: Sequence[Diagnostic]) -> str:
    """GitHub Actions workflow commands: one ``::error``/``::warning`` line per finding."""
    lines = []
    for d in diagnostics:
        level = "error" if d.severity == "error" else "warning"
        props = ",".join(
            [
                f"file={_escape_property(display_path(d.file))}",
                f"line={d.line}",
                f"col={d.column}",
                f"endLine={d.end_line}",
                f"endColumn={d.end_column}",
                f"title={_escape_property(d.code)}",
            ]
        )
        lines.append(f"::{level} {props}::{_escape_data(f'{d.code} {d.message}')}")
    return "\n".join(lines)


def _source_line(path: Path, line: int, cache: dict[Path, list[str] | None]) -> str | None:
    if path not in cache:  # never through a link, never outside the task (read_source_lines)
        cache[path] = read_source_lines(path)
    lines = cache[path]
    if lines is None or not 1 <= line <= len(lines):
        return None
    return lines[line - 1]


_INDENT = " " * 11
"""Continuation lines of a message start under the source line's bar."""


def _wrapped(message: str, head: str, width: int | None) -> list[str]:
    """``message`` as the lines it is printed in: the first after ``head``, the others after
    :data:`_INDENT`; broken only between words (a long path or name is never cut)."""
    if width is None or len(head) + len(message) <= width:
        return [message]
    lines = textwrap.wrap(
        message,
        width=max(20, width - len(_INDENT)),
        initial_indent=" " * max(0, len(head) - len(_INDENT)),
        break_long_words=False,
        break_on_hyphens=False,
    )
    return [lines[0].lstrip(" "), *lines[1:]] if lines else [message]


def _fix_of(d: Diagnostic) -> str:
    """What to do about a lint finding: its rule's fix (:attr:`Diagnostic.hint`, the first
    sentence of ``rule CODE``'s Fix), and whether ``lint --fix`` applies it. A prove finding
    (ES9) says its fix in its message already."""
    if d.code.startswith("ES9") or "Fix:" in d.message:
        return ""
    text = d.hint
    if d.fix is not None and d.fix.safe:
        text = (text + " " if text else "") + "(`lint --fix` applies it)"
    return text


def render_text(
    diagnostics: Sequence[Diagnostic],
    out: IO[str],
    *,
    color: bool | None = None,
    summary: str | None = None,
    width: int | None = None,
) -> None:
    """Human output: grouped by file, each finding with its code and the offending line.

    A message is wrapped at word boundaries to ``width`` (default: the terminal's width; not
    wrapped at all in a pipe or a log, where one finding per line reads and greps best)."""
    # deferred: rich costs ~25 ms to import, which json/sarif output and a clean lint skip
    from rich.console import Console

    # every string printed here may quote the end state: made visible, never obeyed
    escape = textsafe.markup

    console = Console(
        file=out, force_terminal=color, no_color=color is False, highlight=False, soft_wrap=True
    )
    wrap_at = width if width is not None else (console.width if console.is_terminal else None)
    cache: dict[Path, list[str] | None] = {}
    current: Path | None = None
    for d in diagnostics:
        if d.file != current:
            if current is not None:
                console.print()
            current = d.file
            console.print(f"[bold underline]{escape(display_path(d.file))}[/]")
        style = "red" if d.severity == "error" else "yellow"
        where = f"{d.line}:{d.column}"
        head = f"  {where:>7}  {d.code} {d.severity}  "
        lines = _wrapped(
            d.message,
            head,
            wrap_at,
        )
        console.print(
            f"  [dim]{where:>7}[/]  [bold {style}]{d.code}[/] "
            f"[{style}]{d.severity}[/]  {escape(lines[0])}"
        )
        for more in lines[1:]:
            console.print(f"{_INDENT}{escape(more)}")
        src = _source_line(d.file, d.line, cache)
        if src is not None and src.strip():
            shown = textsafe.one_line(src.expandtabs(4))
            if len(shown) > 160:
                shown = shown[:157] + "..."
            console.print(f"           [dim]│[/] {escape(shown)}")
            width = (d.end_column - d.column) if d.end_line == d.line else len(src) - d.column + 1
            if d.column - 1 <= len(shown):
                caret = " " * (d.column - 1) + "^" * max(1, min(width, len(shown) - d.column + 1))
                console.print(f"           [dim]│[/] [{style}]{caret}[/]")
        fix = _fix_of(d)
        if fix:
            for part in _wrapped(f"fix: {fix}", _INDENT, wrap_at):
                console.print(f"{_INDENT}[dim]{escape(part.strip())}[/]")
        ready = (d.counterexample or {}).get("assertion")
        if isinstance(ready, str) and ready:
            # the ready test (prove's counterexample), to paste into a holdout test
            console.print(f"{_INDENT}[dim]add to a holdout test:[/]")
            for part in ready.splitlines():
                console.print(f"{_INDENT}  {escape(textsafe.one_line(part))}")
    if summary:
        if diagnostics:
            console.print()
        console.print(escape(summary))
