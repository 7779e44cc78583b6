"""Diagnostics: lint the task of an open task.json as it is typed, and publish the findings.

Registers ``didOpen``, ``didChange``, ``didClose``, ``workspace/didChangeWatchedFiles`` and
``textDocument/diagnostic``; the path from a keystroke to a diagnostic: docs/architecture.md.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types as lsp

from endstate_author.assist import task_root_of
from endstate_author.engine.context import TaskContext
from endstate_author.engine.declare import found_by_prove
from endstate_author.engine.diagnostics import Diagnostic
from endstate_author.lint.run import run_rules
from endstate_lsp.convert import Lines, path_to_uri, to_lsp, uri_to_path
from endstate_lsp.documents import MANIFEST
from endstate_lsp.guard import guarded
from endstate_lsp.prove_report import place_findings

if TYPE_CHECKING:
    from endstate_lsp.server import EndstateServer


class Diagnostics:
    """Pending lints by URI, each document's last findings, and publishing them."""

    def __init__(self, ls: EndstateServer) -> None:
        self.ls = ls
        self.pending: dict[str, asyncio.Task[None]] = {}
        self.last: dict[str, list[Diagnostic]] = {}

    @property
    def pull_mode(self) -> bool:
        """The client asks for diagnostics (textDocument/diagnostic) instead of taking them."""
        caps = self.ls.client_capabilities.text_document
        return caps is not None and caps.diagnostic is not None

    def lint_buffer(self, root: Path, data: bytes) -> list[Diagnostic]:
        """Lint an unsaved buffer, reusing what does not change between keystrokes.

        The directory listings and the grader catalogue of a task only change when files
        change on disk, which the watched-files handler reports (it drops these caches), so
        a keystroke re-reads only the buffer.
        """
        state = self.ls.tasks[root]
        config = state.lint_config()
        catalogue = self.ls.tasks.graders(root).catalogue
        ctx = TaskContext(
            root,
            suite_root=root.parent,
            config=config,
            text=data,
            catalogue=catalogue,
            trees=state.listings(self.ls.tasks.watching),
        )
        return sorted(run_rules(ctx, config), key=Diagnostic.sort_key)

    def lint(self, uri: str) -> dict[str, list[lsp.Diagnostic]]:
        """Lint the task of ``uri`` (its buffer text): LSP diagnostics grouped by file URI."""
        path = uri_to_path(uri)
        buffer = self.ls.documents.buffer(uri)
        if path is None or buffer is None:
            return {}
        data = buffer.data
        root = path.parent
        # a buffer over lint's size limit is lint's to report, as for a file on disk
        found = self.lint_buffer(root, data)
        state = self.ls.tasks.get(root)
        if state is not None and state.proof is not None:
            # prove repeats lint's own findings (its static warnings beside its checks, the
            # reasons a task does not load): the buffer's lint above already has them, newer
            proved = [d for d in state.proof.diagnostics if found_by_prove(d.code)]
            found = found + place_findings(proved, data)
        self.last[uri] = found
        grouped: dict[str, list[lsp.Diagnostic]] = {uri: []}
        other_lines: dict[Path, Lines] = {}
        real_root = root.resolve()
        for diag in found:
            if diag.file.name == path.name and diag.file.parent.resolve() == real_root:
                grouped[uri].append(to_lsp(diag, buffer.lines))
            else:
                lines = other_lines.get(diag.file)
                if lines is None:
                    lines = other_lines[diag.file] = self.ls.documents.file_lines(diag.file)
                grouped.setdefault(path_to_uri(diag.file), []).append(to_lsp(diag, lines))
        return grouped

    def findings(self, uri: str) -> list[Diagnostic]:
        """The document's findings as last linted (linting it now if it never was)."""
        found = self.last.get(uri)
        if found is None:
            self.lint(uri)
            found = self.last.get(uri, [])
        return found

    def publish(self, uri: str, version: int | None) -> None:
        grouped = self.lint(uri)
        path = uri_to_path(uri)
        if path is None:
            return
        state = self.ls.tasks[path.parent]
        mine = grouped.pop(uri, [])
        if not self.pull_mode:
            self.ls.text_document_publish_diagnostics(
                lsp.PublishDiagnosticsParams(uri=uri, diagnostics=mine, version=version)
            )
        before = state.published
        for other, diags in grouped.items():
            self.ls.text_document_publish_diagnostics(
                lsp.PublishDiagnosticsParams(uri=other, diagnostics=diags)
            )
        for gone in before - set(grouped):
            self.ls.text_document_publish_diagnostics(
                lsp.PublishDiagnosticsParams(uri=gone, diagnostics=[])
            )
        state.published = set(grouped)

    def publish_now(self, uri: str, version: int | None) -> None:
        """:meth:`publish` at once, in place of a pending scheduled lint of ``uri``."""
        old = self.pending.pop(uri, None)
        if old is not None:
            old.cancel()
        self._publish_or_log(uri, version)

    def _publish_or_log(self, uri: str, version: int | None) -> None:
        """:meth:`publish`; a failure is logged (the editor keeps what it showed)."""
        try:
            self.publish(uri, version)
        except Exception as exc:
            self.ls.log(
                f"lint failed for {uri}: {type(exc).__name__}: {exc}", lsp.MessageType.Error
            )

    def schedule(self, uri: str, version: int | None, delay_ms: int | None = None) -> None:
        """Lint ``uri`` after the debounce delay; a newer change cancels the wait."""
        old = self.pending.pop(uri, None)
        if old is not None:
            old.cancel()
        delay = self.ls.settings.debounce_ms if delay_ms is None else delay_ms

        async def run() -> None:
            try:
                if delay > 0:
                    await asyncio.sleep(delay / 1000)
                self._publish_or_log(uri, version)
            finally:
                if self.pending.get(uri) is task:
                    del self.pending[uri]

        task = asyncio.get_running_loop().create_task(run())
        self.pending[uri] = task

    def relint_root(self, root: Path, delay_ms: int | None = None, now: bool = False) -> None:
        """Lint every open task.json of ``root`` again (files changed, or a proof came in:
        ``delay_ms`` 0, since prove's results are not keystrokes to wait out; ``now``
        publishes before returning, a pending lint of the document replaced)."""
        for doc_uri in list(self.ls.workspace.text_documents):
            path = uri_to_path(doc_uri)
            if path is not None and path.name == MANIFEST and path.parent == root:
                doc = self.ls.workspace.get_text_document(doc_uri)
                if now:
                    self.publish_now(doc_uri, doc.version)
                else:
                    self.schedule(doc_uri, doc.version, delay_ms)
        if self.pull_mode:
            refresh = self.ls.client_capabilities.workspace
            if refresh and refresh.diagnostics and refresh.diagnostics.refresh_support:
                self.ls.workspace_diagnostic_refresh(None)

    def open_roots(self) -> list[Path]:
        """The task folders of every open task.json."""
        roots = []
        for doc_uri in list(self.ls.workspace.text_documents):
            path = uri_to_path(doc_uri)
            if path is not None and path.name == MANIFEST:
                roots.append(path.parent)
        return roots

    def close(self, uri: str) -> None:
        task = self.pending.pop(uri, None)
        if task is not None:
            task.cancel()
        self.last.pop(uri, None)


def register(ls: EndstateServer) -> None:
    """Document sync and file watching drive the lints; pull clients ask for them."""

    @ls.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
    @guarded()
    def did_open(ls: EndstateServer, params: lsp.DidOpenTextDocumentParams) -> None:
        if params.text_document.uri.endswith(MANIFEST):
            path = uri_to_path(params.text_document.uri)
            if path is not None:
                ls.tasks.forget_files(path.parent)
            ls.diagnostics.schedule(
                params.text_document.uri, params.text_document.version, delay_ms=0
            )
            ls.prover.warm()  # a task open in a trusted workspace: its first save is near

    @ls.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
    @guarded()
    def did_change(ls: EndstateServer, params: lsp.DidChangeTextDocumentParams) -> None:
        if params.text_document.uri.endswith(MANIFEST):
            ls.diagnostics.schedule(params.text_document.uri, params.text_document.version)

    @ls.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
    @guarded()
    def did_close(ls: EndstateServer, params: lsp.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        ls.diagnostics.close(uri)
        ls.documents.forget(uri)
        if uri.endswith(MANIFEST) and not ls.diagnostics.pull_mode:
            ls.text_document_publish_diagnostics(
                lsp.PublishDiagnosticsParams(uri=uri, diagnostics=[])
            )

    @ls.feature(lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    @guarded()
    async def did_change_watched(
        ls: EndstateServer, params: lsp.DidChangeWatchedFilesParams
    ) -> None:
        roots: set[Path] = set()
        prove: set[Path] = set()
        open_uris = set(ls.workspace.text_documents)
        for change in params.changes:
            path = uri_to_path(change.uri)
            if path is None:
                continue
            root = task_root_of(path)
            if root is not None:
                roots.add(root)
                if change.uri not in open_uris:
                    prove.add(root)
            else:  # a suite grader module: every open task may use it
                roots.update(ls.diagnostics.open_roots())
        for root in roots:
            ls.tasks.forget_files(root)
            ls.diagnostics.relint_root(root)
        for root in prove:
            await ls.prover.start(root)

    @ls.feature(
        lsp.TEXT_DOCUMENT_DIAGNOSTIC,
        lsp.DiagnosticOptions(inter_file_dependencies=True, workspace_diagnostics=False),
    )
    @guarded(lambda: lsp.FullDocumentDiagnosticReport(items=[]))
    def pull_diagnostics(ls: EndstateServer, params: lsp.DocumentDiagnosticParams) -> Any:
        uri = params.text_document.uri
        if not uri.endswith(MANIFEST):
            return lsp.FullDocumentDiagnosticReport(items=[])
        grouped = ls.diagnostics.lint(uri)
        mine = grouped.pop(uri, [])
        for other, diags in grouped.items():
            ls.text_document_publish_diagnostics(
                lsp.PublishDiagnosticsParams(uri=other, diagnostics=diags)
            )
        return lsp.FullDocumentDiagnosticReport(items=mine)
