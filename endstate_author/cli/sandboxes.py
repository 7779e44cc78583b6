"""``--sandbox`` and ``--image``: the same two options, the same resolution and the same
header line for every command that runs a task's code (prove, eval, run, redteam, hook).

:func:`choose` needs no typer (prove's typer-free path, :mod:`endstate_author.cli.prove_command`,
calls it too): the two typer options are built on first use (:func:`__getattr__`).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, TypeAlias

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

if TYPE_CHECKING:  # what the two options hand the command; at run time, typer's Annotated
    SandboxOption: TypeAlias = SandboxKind
    ImageOption: TypeAlias = str | None


def __getattr__(name: str) -> Any:
    """``SandboxOption`` and ``ImageOption``, the typer options, built when a command module
    that declares them is imported."""
    if name not in ("SandboxOption", "ImageOption"):  # any other look-up, never typer's
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    # deferred: typer (~60 ms), which prove's typer-free path never imports
    import typer

    if name == "SandboxOption":
        return Annotated[
            SandboxKind,
            typer.Option(
                "--sandbox",
                help="Where the task's code runs: auto (Docker when a Docker run can start, "
                "see `sandbox status`; else local), docker, or local (walled in by bubblewrap "
                "where it can start, else no isolation).",
            ),
        ]
    return Annotated[
        str | None,
        typer.Option(
            "--image",
            help="Docker image (default: $ENDSTATE_SANDBOX_IMAGE, the toolkit's own image "
            "when built, python:3.12-slim; see `sandbox status`).",
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
    print(line, file=sys.stderr, flush=True)


def _fail(message: str) -> NoReturn:
    """A usage error, exit 2 (``SystemExit``: typer lets it through as its own exit)."""
    _err(f"endstate-author: {message}")
    raise SystemExit(2)
