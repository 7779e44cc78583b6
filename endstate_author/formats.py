"""Output formats for findings: text (rich), json, sarif (2.1.0) and github annotations.

The JSON shape is an interface (editors, CI scripts and prove's own JSON embed it): a
list of objects with exactly ``code, severity, message, file, line, column, end_line,
end_column``, 1-based, ``end_column`` exclusive. Keep it stable.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from endstate_author import __version__
from endstate_author.diagnostics import Diagnostic, display_path

FORMATS = ("text", "json", "sarif", "github")

SARIF_SCHEMA = (
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
)


def to_json(diagnostics: Sequence[Diagnostic]) -> list[dict[str, Any]]:
    return [d.to_json() for d in diagnostics]


def render_json(diagnostics: Sequence[Diagnostic]) -> str:
    return json.dumps(to_json(diagnostics), indent=2, ensure_ascii=False)


def to_sarif(diagnostics: Sequence[Diagnostic]) -> dict[str, Any]:
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
                        "informationUri": "https://pypi.org/project/endstate-author/",
                        "rules": rules,
                    }
                },
                "columnKind": "unicodeCodePoints",
                "results": results,
            }
        ],
    }


def render_sarif(diagnostics: Sequence[Diagnostic]) -> str:
    return json.dumps(to_sarif(diagnostics), indent=2, ensure_ascii=False)


def _escape_data(text: str) -> str:
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
    if path not in cache:
        try:
            if path.is_file() and path.stat().st_size <= 1 << 20:
                cache[path] = path.read_bytes().decode("utf-8", errors="replace").splitlines()
            else:
                cache[path] = None
        except OSError:
            cache[path] = None
    lines = cache[path]
    if lines is None or not 1 <= line <= len(lines):
        return None
    return lines[line - 1]


def render_text(
    diagnostics: Sequence[Diagnostic],
    out: IO[str],
    *,
    color: bool | None = None,
    summary: str | None = None,
) -> None:
    """Human output: grouped by file, each finding with its code and the offending line."""
    from rich.console import Console
    from rich.markup import escape

    console = Console(
        file=out, force_terminal=color, no_color=color is False, highlight=False, soft_wrap=True
    )
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
        console.print(
            f"  [dim]{where:>7}[/]  [bold {style}]{d.code}[/] "
            f"[{style}]{d.severity}[/]  {escape(d.message)}"
        )
        src = _source_line(d.file, d.line, cache)
        if src is not None and src.strip():
            shown = src.expandtabs(4)
            if len(shown) > 160:
                shown = shown[:157] + "..."
            console.print(f"           [dim]│[/] {escape(shown)}")
            width = (d.end_column - d.column) if d.end_line == d.line else len(src) - d.column + 1
            if d.column - 1 <= len(shown):
                caret = " " * (d.column - 1) + "^" * max(1, min(width, len(shown) - d.column + 1))
                console.print(f"           [dim]│[/] [{style}]{caret}[/]")
    if summary:
        if diagnostics:
            console.print()
        console.print(summary)
