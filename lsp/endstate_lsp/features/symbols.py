"""Outline: ``textDocument/documentSymbol`` for task.json.

Why this module exists: :func:`endstate_author.assist.document_symbols` builds the outline
(graders by function name with their arguments, ``requires`` bounds, the other keys) with
byte ranges; this maps its kinds and ranges to the protocol's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types as lsp

from endstate_author.assist import Symbol, document_symbols
from endstate_lsp.convert import Lines
from endstate_lsp.guard import guarded

if TYPE_CHECKING:
    from endstate_lsp.server import EndstateServer

KINDS = {
    "array": lsp.SymbolKind.Array,
    "object": lsp.SymbolKind.Object,
    "function": lsp.SymbolKind.Function,
    "property": lsp.SymbolKind.Property,
    "number": lsp.SymbolKind.Number,
    "string": lsp.SymbolKind.String,
}


def to_lsp(sym: Symbol, lines: Lines) -> lsp.DocumentSymbol:
    return lsp.DocumentSymbol(
        name=sym.name or '""',
        detail=sym.detail or None,
        kind=KINDS[sym.kind],
        range=lines.range(sym.start, sym.end),
        selection_range=lines.range(sym.select_start, sym.select_end),
        children=[to_lsp(c, lines) for c in sym.children] or None,
    )


def register(ls: EndstateServer) -> None:
    @ls.feature(lsp.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
    @guarded(list)
    def document_symbol(
        ls: EndstateServer, params: lsp.DocumentSymbolParams
    ) -> list[lsp.DocumentSymbol]:
        doc = ls.documents.task_document(params.text_document.uri)
        if doc is None:
            return []
        return [to_lsp(s, doc.lines) for s in document_symbols(doc.data)]
