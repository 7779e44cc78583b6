"""What every command prints through: the ``--output-format`` choice, findings, usage errors.

lint, prove and the git hook print findings the same way; keeping :class:`OutputFormat`
and :func:`emit` here (not beside the app) lets each command module import them without
importing the app that registers it. None of it imports typer (prove's typer-free path,
:mod:`endstate_author.cli.prove_command`, prints through it): :func:`echo` prints as
``typer.echo`` does.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from enum import StrEnum
from typing import TYPE_CHECKING

from endstate_author.engine.diagnostics import Diagnostic
from endstate_author.lint import formats

if TYPE_CHECKING:
    import typer

_ANSI = re.compile(r"\033\[[;?0-9]*[a-zA-Z]")  # what typer's echo strips outside a terminal


def echo(text: str, err: bool = False) -> None:
    """``text`` and a newline on stdout (or stderr), as ``typer.echo`` prints a string: its
    colour codes dropped when the stream is not a terminal."""
    stream = sys.stderr if err else sys.stdout
    if not stream.isatty():
        text = _ANSI.sub("", text)
    stream.write(text + "\n")
    stream.flush()


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
        echo(formats.render_json(diagnostics))
    elif output_format is OutputFormat.sarif:
        echo(formats.render_sarif(diagnostics))
    elif output_format is OutputFormat.github:
        text = formats.render_github(diagnostics)
        if text:
            echo(text)
    else:
        formats.render_text(diagnostics, sys.stdout, summary=summary)


def fail(message: str, code: int = 2) -> typer.Exit:
    """A usage error: the message on stderr, and the exit to raise (status 2 by default)."""
    import typer  # deferred: only the typer commands raise typer's exit

    typer.echo(f"endstate-author: {message}", err=True)
    return typer.Exit(code)
