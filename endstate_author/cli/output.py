"""What every command prints through: the ``--output-format`` choice, findings, usage errors.

lint, prove and the git hook print findings the same way; keeping :class:`OutputFormat`
and :func:`emit` here (not beside the app) lets each command module import them without
importing the app that registers it.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from enum import StrEnum

import typer

from endstate_author.engine.diagnostics import Diagnostic
from endstate_author.lint import formats


class OutputFormat(StrEnum):
    text = "text"
    json = "json"
    sarif = "sarif"
    github = "github"


def emit(
    diagnostics: Sequence[Diagnostic], output_format: OutputFormat, summary: str | None
) -> None:
    """Print findings in the chosen format on stdout (``summary`` only in text)."""
    if output_format is OutputFormat.json:
        typer.echo(formats.render_json(diagnostics))
    elif output_format is OutputFormat.sarif:
        typer.echo(formats.render_sarif(diagnostics))
    elif output_format is OutputFormat.github:
        text = formats.render_github(diagnostics)
        if text:
            typer.echo(text)
    else:
        formats.render_text(diagnostics, sys.stdout, summary=summary)


def fail(message: str, code: int = 2) -> typer.Exit:
    """A usage error: the message on stderr, and the exit to raise (status 2 by default)."""
    typer.echo(f"endstate-author: {message}", err=True)
    return typer.Exit(code)
