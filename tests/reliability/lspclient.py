"""The raw JSON-RPC client of the language server, re-exported: it lives in
:mod:`tests.support.lspclient`, shared with ``bench/fuzz.py``."""

from tests.support.lspclient import SERVER, LspClient

__all__ = ["SERVER", "LspClient"]
