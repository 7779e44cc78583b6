"""Hover: ``textDocument/hover`` for task.json.

Why this module exists: what a key, grader name, argument, counter or enum value means is
decided by :func:`endstate_author.assist.hover` (markdown and a byte range); this is the
protocol side, positions in and out.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types as lsp

from endstate_author.assist import hover as find_hover
from endstate_lsp.guard import guarded

if TYPE_CHECKING:
    from endstate_lsp.server import EndstateServer


def register(ls: EndstateServer) -> None:
    @ls.feature(lsp.TEXT_DOCUMENT_HOVER)
    @guarded()
    def hover(ls: EndstateServer, params: lsp.HoverParams) -> lsp.Hover | None:
        doc = ls.documents.task_document(params.text_document.uri)
        if doc is None:
            return None
        offset = doc.lines.offset(params.position)
        info = find_hover(doc.root, doc.data, offset, graders=ls.tasks.graders(doc.root))
        if info is None:
            return None
        return lsp.Hover(
            contents=lsp.MarkupContent(kind=lsp.MarkupKind.Markdown, value=info.markdown),
            range=doc.lines.range(info.start, info.end),
        )
