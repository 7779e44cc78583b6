"""The endstate-author language server: the server object, and the wiring of its features.

Every answer (findings, completion, hover, fixes, links, outline) comes from
``endstate_author`` — the same code the CLI runs — through ``endstate_author.editor``; the
protocol side lives in one module per feature (:mod:`endstate_lsp.features`), prove on save
in :mod:`endstate_lsp.prove_on_save`. This module holds what they share:
:class:`EndstateServer` (settings, documents, per-task state, the lint scheduler, the prover)
and :func:`create_server`, which registers every feature on it.

Safety: a suite opened in an editor is untrusted input. Lint reads graders' source without
importing it; prove (which imports and runs suite code) starts only when the client says the
workspace is ``trusted`` *and* ``proveOnSave`` is on. Every handler is guarded
(:mod:`endstate_lsp.guard`): a failure becomes a log message and an empty answer, never a
dead server.
"""

from __future__ import annotations

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer

from endstate_lsp import __version__, guard, prove_on_save
from endstate_lsp.documents import MAX_BYTES, Documents
from endstate_lsp.features import (
    actions,
    code_lens,
    completion,
    configuration,
    diagnostics,
    hover,
    navigation,
    symbols,
)
from endstate_lsp.features.diagnostics import Diagnostics
from endstate_lsp.prove_on_save import PROVE_CMD_ENV, PROVE_COMMAND, ProveOnSave
from endstate_lsp.settings import SANDBOXES, SECTION, Settings
from endstate_lsp.state import STALE_S, TaskStates

__all__ = [
    "FEATURES",
    "MAX_BYTES",
    "PROVE_CMD_ENV",
    "PROVE_COMMAND",
    "SANDBOXES",
    "SECTION",
    "STALE_S",
    "EndstateServer",
    "Settings",
    "create_server",
    "main",
    "server",
]


class EndstateServer(LanguageServer):
    """One editor session: its settings, documents, per-task state, lints and prove runs."""

    def __init__(self) -> None:
        super().__init__("endstate-author", __version__)
        self.settings = Settings()
        self.tasks = TaskStates()
        self.documents = Documents(self)
        self.diagnostics = Diagnostics(self)
        self.prover = ProveOnSave(self)

    def log(self, message: str, kind: lsp.MessageType = lsp.MessageType.Log) -> None:
        guard.log(self, message, kind)


FEATURES = (
    configuration,
    diagnostics,
    prove_on_save,
    completion,
    hover,
    navigation,
    symbols,
    actions,
    code_lens,
)
"""Every module with a ``register(ls)`` hook, in the order they are registered."""


def create_server() -> EndstateServer:
    """A server with every feature registered."""
    ls = EndstateServer()
    for feature in FEATURES:
        feature.register(ls)
    return ls


server = create_server()


def main(tcp: str | None = None) -> None:
    """Serve over stdio, or on ``HOST:PORT`` when ``tcp`` is given."""
    if tcp:
        host, _, port = tcp.rpartition(":")
        if not port.isdigit():
            raise SystemExit(f"--tcp wants HOST:PORT, got {tcp!r}")
        server.start_tcp(host or "127.0.0.1", int(port))
    else:
        server.start_io()
