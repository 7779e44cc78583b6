"""Navigation: ``textDocument/definition`` and ``textDocument/documentLink`` for task.json."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types as lsp

from endstate_author.assist import definition as find_definition
from endstate_author.assist import document_links
from endstate_lsp.convert import path_to_uri
from endstate_lsp.guard import guarded

if TYPE_CHECKING:
    from endstate_lsp.server import EndstateServer


def register(ls: EndstateServer) -> None:
    @ls.feature(lsp.TEXT_DOCUMENT_DEFINITION)
    @guarded()
    def definition(ls: EndstateServer, params: lsp.DefinitionParams) -> lsp.Location | None:
        doc = ls.documents.task_document(params.text_document.uri)
        if doc is None:
            return None
        offset = doc.lines.offset(params.position)
        target = find_definition(doc.root, doc.data, offset, graders=ls.tasks.graders(doc.root))
        if target is None:
            return None
        pos = ls.documents.file_lines(target.file).char_position(target.line, target.column)
        return lsp.Location(uri=path_to_uri(target.file), range=lsp.Range(start=pos, end=pos))

    @ls.feature(lsp.TEXT_DOCUMENT_DOCUMENT_LINK)
    @guarded(list)
    def document_link(ls: EndstateServer, params: lsp.DocumentLinkParams) -> list[lsp.DocumentLink]:
        doc = ls.documents.task_document(params.text_document.uri)
        if doc is None:
            return []
        return [
            lsp.DocumentLink(
                range=doc.lines.range(link.start, link.end),
                target=path_to_uri(link.target),
                tooltip=link.tooltip,
            )
            for link in document_links(doc.root, doc.data)
        ]
