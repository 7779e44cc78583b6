"""The language server assembled: every feature registered on one :class:`EndstateServer`.

What ``endstate-author lsp`` (and ``python -m endstate_lsp``) serves. The features never
import each other or this module; they meet on the server object (:mod:`endstate_lsp.server`).
"""

from __future__ import annotations

import endstate_lsp.prove_on_save as prove_on_save
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
from endstate_lsp.prove_on_save import ProveOnSave
from endstate_lsp.server import EndstateServer

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
    ls.diagnostics = Diagnostics(ls)
    ls.prover = ProveOnSave(ls)
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
