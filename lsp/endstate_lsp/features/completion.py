"""Completion: ``textDocument/completion`` for task.json."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from lsprotocol import types as lsp

from endstate_author.assist import complete
from endstate_lsp.guard import guarded

if TYPE_CHECKING:
    from endstate_lsp.server import EndstateServer

KINDS = {
    "property": lsp.CompletionItemKind.Property,
    "value": lsp.CompletionItemKind.Value,
    "enum": lsp.CompletionItemKind.EnumMember,
    "function": lsp.CompletionItemKind.Function,
    "file": lsp.CompletionItemKind.File,
    "folder": lsp.CompletionItemKind.Folder,
    "snippet": lsp.CompletionItemKind.Snippet,
}

TRIGGERS = ['"', ":", "/"]

_CHOICE = re.compile(r"\$\{\d+\|([^,|}]*)[^}]*\|\}")
_PLACEHOLDER = re.compile(r"\$\{\d+:([^}]*)\}")
_TABSTOP = re.compile(r"\$\{\d+\}|\$\d+")


def strip_snippet(text: str) -> str:
    """A snippet as plain text for clients without snippet support: a choice becomes its
    first option, a placeholder its default, a tab stop nothing."""
    text = _CHOICE.sub(r"\1", text)
    text = _PLACEHOLDER.sub(r"\1", text)
    text = _TABSTOP.sub("", text)
    return text.replace("\\$", "$").replace("\\}", "}").replace("\\\\", "\\")


def register(ls: EndstateServer) -> None:
    @ls.feature(lsp.TEXT_DOCUMENT_COMPLETION, lsp.CompletionOptions(trigger_characters=TRIGGERS))
    @guarded(lambda: lsp.CompletionList(is_incomplete=False, items=[]))
    def completion(ls: EndstateServer, params: lsp.CompletionParams) -> lsp.CompletionList:
        doc = ls.documents.task_document(params.text_document.uri)
        if doc is None:
            return lsp.CompletionList(is_incomplete=False, items=[])
        lines = doc.lines
        caps = ls.client_capabilities.text_document
        snippets = bool(
            caps
            and caps.completion
            and caps.completion.completion_item
            and caps.completion.completion_item.snippet_support
        )
        offset = lines.offset(params.position)
        items = []
        for item in complete(doc.root, doc.data, offset, graders=ls.tasks.graders(doc.root)):
            text = item.insert if snippets or not item.is_snippet else strip_snippet(item.insert)
            items.append(
                lsp.CompletionItem(
                    label=item.label,
                    kind=KINDS.get(item.kind, lsp.CompletionItemKind.Value),
                    detail=item.detail or None,
                    documentation=lsp.MarkupContent(
                        kind=lsp.MarkupKind.Markdown, value=item.documentation
                    )
                    if item.documentation
                    else None,
                    filter_text=item.filter_text,
                    sort_text=item.sort_text,
                    insert_text_format=lsp.InsertTextFormat.Snippet
                    if snippets
                    else lsp.InsertTextFormat.PlainText,
                    text_edit=lsp.TextEdit(range=lines.range(item.start, item.end), new_text=text),
                )
            )
        return lsp.CompletionList(is_incomplete=False, items=items)
