"""``endstate-author lsp``: start the language server (stdio, or ``--tcp HOST:PORT``)."""

from __future__ import annotations

import runpy
import sys
from typing import Annotated

import typer

SERVER_MODULE = "endstate_lsp"


def lsp(
    tcp: Annotated[
        str | None, typer.Option("--tcp", metavar="HOST:PORT", help="Listen on TCP, not stdio.")
    ] = None,
) -> None:
    """Start the language server (stdio by default)."""
    sys.argv = [sys.argv[0], *([f"--tcp={tcp}"] if tcp is not None else [])]
    runpy.run_module(SERVER_MODULE, run_name="__main__")
