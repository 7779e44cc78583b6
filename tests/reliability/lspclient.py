"""The raw JSON-RPC client of the language server, re-exported: it lives in
:mod:`endstate_author.testing.lspclient`, shared with ``bench/fuzz.py``."""

from endstate_author.testing.lspclient import SERVER, LspClient

__all__ = ["SERVER", "LspClient"]
