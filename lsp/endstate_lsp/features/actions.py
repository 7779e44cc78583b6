"""Code actions: ``textDocument/codeAction`` for task.json (quick fixes and fix-all), and
quick fixes for its findings in other files of the task (a holdout test's name missing from
prompt.md). Which findings an action answers is endstate_author's to say (the rules declare
it); this module holds no rule codes.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types as lsp

from endstate_author.assist import (
    Action,
    fix_all,
    mandatory_assertions,
    quick_fixes,
    ready_tests,
    task_root_of,
)
from endstate_author.engine.diagnostics import TextEdit
from endstate_lsp.convert import Lines, overlaps, path_to_uri, to_lsp, uri_to_path
from endstate_lsp.documents import TaskDocument
from endstate_lsp.guard import guarded

if TYPE_CHECKING:
    from endstate_lsp.server import EndstateServer

def workspace_edit(ls: EndstateServer, action: Action, doc: TaskDocument) -> lsp.WorkspaceEdit:
    """An action's edits and creates as document changes (edits on the document itself use
    its buffer's positions and version; edits on other files, theirs)."""
    changes: list[Any] = []
    by_file: dict[Path, list[TextEdit]] = {}
    for edit in action.edits:
        by_file.setdefault(edit.file, []).append(edit)
    doc_path = uri_to_path(doc.uri)
    for file, edits in by_file.items():
        target_uri = (
            doc.uri
            if doc_path is not None and file.resolve() == doc_path.resolve()
            else path_to_uri(file)
        )
        lines: Lines = doc.lines if target_uri == doc.uri else ls.documents.file_lines(file)
        version = None
        with contextlib.suppress(Exception):
            version = ls.workspace.get_text_document(target_uri).version
        changes.append(
            lsp.TextDocumentEdit(
                text_document=lsp.OptionalVersionedTextDocumentIdentifier(
                    uri=target_uri, version=version
                ),
                edits=[
                    lsp.TextEdit(range=lines.range(e.start, e.end), new_text=e.new_text)
                    for e in sorted(edits, key=lambda e: e.start)
                ],
            )
        )
    for create in action.creates:
        target = path_to_uri(create.file)
        changes.append(
            lsp.CreateFile(uri=target, options=lsp.CreateFileOptions(ignore_if_exists=True))
        )
        if create.content:
            zero = lsp.Position(line=0, character=0)
            changes.append(
                lsp.TextDocumentEdit(
                    text_document=lsp.OptionalVersionedTextDocumentIdentifier(
                        uri=target, version=None
                    ),
                    edits=[
                        lsp.TextEdit(range=lsp.Range(start=zero, end=zero), new_text=create.content)
                    ],
                )
            )
    return lsp.WorkspaceEdit(document_changes=changes)


def to_code_action(
    ls: EndstateServer,
    action: Action,
    doc: TaskDocument,
    diags: list[lsp.Diagnostic],
    kind: lsp.CodeActionKind,
) -> lsp.CodeAction:
    return lsp.CodeAction(
        title=action.title,
        kind=kind,
        diagnostics=diags or None,
        is_preferred=action.preferred or None,
        edit=workspace_edit(ls, action, doc),
    )


def other_file_actions(ls: EndstateServer, params: lsp.CodeActionParams) -> list[lsp.CodeAction]:
    """Quick fixes for findings lint placed in another file of a task (a holdout test: name
    it in prompt.md), when the task's task.json is open."""
    path = uri_to_path(params.text_document.uri)
    root = task_root_of(path) if path is not None else None
    if path is None or root is None:
        return []
    manifest = ls.documents.task_document(path_to_uri(root / "task.json"))
    if manifest is None:
        return []
    here = path.resolve()
    diags = [d for d in ls.diagnostics.findings(manifest.uri) if d.file.resolve() == here]
    lines = ls.documents.file_lines(path)
    out = []
    for action in [*quick_fixes(diags), *ready_tests(root, diags, open_text(ls))]:
        lsp_diags = [to_lsp(d, lines) for d in action.diagnostics]
        if any(overlaps(d.range, params.range) for d in lsp_diags):
            out.append(to_code_action(ls, action, manifest, lsp_diags, lsp.CodeActionKind.QuickFix))
    return out


def open_text(ls: EndstateServer) -> Callable[[Path], bytes | None]:
    """An open file's text as the editor has it, unsaved changes included (None for a file
    not open): the edits' offsets are the buffer's, which the versioned edit applies to."""

    def read(path: Path) -> bytes | None:
        buffer = ls.documents.buffer(path_to_uri(path))
        return buffer.data if buffer is not None and buffer.version is not None else None

    return read


def register(ls: EndstateServer) -> None:
    @ls.feature(
        lsp.TEXT_DOCUMENT_CODE_ACTION,
        lsp.CodeActionOptions(
            code_action_kinds=[lsp.CodeActionKind.QuickFix, lsp.CodeActionKind.SourceFixAll]
        ),
    )
    @guarded(list)
    def code_action(ls: EndstateServer, params: lsp.CodeActionParams) -> list[lsp.CodeAction]:
        doc = ls.documents.task_document(params.text_document.uri)
        if doc is None:
            return other_file_actions(ls, params)
        diags = ls.diagnostics.findings(doc.uri)
        wanted = params.context.only
        out: list[lsp.CodeAction] = []
        want_quick = not wanted or any(str(k).startswith("quickfix") for k in wanted)
        want_all = not wanted or any(str(k).startswith("source") for k in wanted)
        quick = lsp.CodeActionKind.QuickFix
        if want_quick:
            for action in quick_fixes(diags):
                lsp_diags = [to_lsp(d, doc.lines) for d in action.diagnostics]
                if not any(overlaps(d.range, params.range) for d in lsp_diags):
                    continue
                out.append(to_code_action(ls, action, doc, lsp_diags, quick))
            extra = mandatory_assertions(doc.root, doc.data, diags)
            if extra is not None:
                related = [to_lsp(d, doc.lines) for d in extra.diagnostics]
                out.append(to_code_action(ls, extra, doc, related, quick))
        if want_all:
            everything = fix_all(diags)
            if everything is not None:
                out.append(to_code_action(ls, everything, doc, [], lsp.CodeActionKind.SourceFixAll))
        return out
