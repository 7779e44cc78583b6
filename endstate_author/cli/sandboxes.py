"""``--sandbox`` and ``--image``: the same two options, the same resolution and the same
header line for every command that runs a task's code (prove, eval, run, redteam, hook).
"""

from __future__ import annotations

from typing import Annotated, NoReturn

import typer

from endstate_author import __version__
from endstate_harness.errors import SandboxError
from endstate_harness.sandbox.choice import (
    DEFAULT_KIND,
    LOCAL_WARNING,
    WALLED_NOTE,
    SandboxChoice,
    SandboxKind,
    resolve_sandbox,
)

SandboxOption = Annotated[
    SandboxKind,
    typer.Option(
        "--sandbox",
        help="Where the task's code runs: auto (Docker when a Docker run can start, see "
        "`sandbox status`; else local), docker, or local (walled in by bubblewrap where it "
        "can start, else no isolation).",
    ),
]
ImageOption = Annotated[
    str | None,
    typer.Option(
        "--image",
        help="Docker image (default: $ENDSTATE_SANDBOX_IMAGE, the toolkit's own image when "
        "built, python:3.12-slim; see `sandbox status`).",
    ),
]

__all__ = ["DEFAULT_KIND", "ImageOption", "SandboxOption", "choose"]


def choose(
    kind: SandboxKind, image: str | None, *, quiet: bool = False, ready: bool = False
) -> SandboxChoice:
    """Resolve the sandbox once, before any task starts, and say which one and why.

    With ``ready``, a Docker sandbox that cannot start (no daemon) is refused here (exit 2)
    instead of failing every task (eval, redteam); prove reports each check unassessed."""
    try:
        choice = resolve_sandbox(kind, image, version=__version__, say=_err)
    except SandboxError as exc:
        _fail(f"{exc}\n(or pass --sandbox local to run without isolation)")
    if ready and not choice.ready:
        _fail(f"{choice.reason}: start Docker, or pass --sandbox local to run without "
              "isolation (`endstate-author sandbox status` says what is missing)")
    if not quiet:
        _err(choice.header())
        if choice.kind == "local":
            _err(f"note: {WALLED_NOTE if choice.walls() == 'bubblewrap' else LOCAL_WARNING}")
    return choice


def _err(line: str) -> None:
    typer.echo(line, err=True)


def _fail(message: str) -> NoReturn:
    typer.echo(f"endstate-author: {message}", err=True)
    raise typer.Exit(2)
