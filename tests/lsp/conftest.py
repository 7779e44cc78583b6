"""End-to-end fixtures: the real server process over stdio, driven by pytest-lsp's client.

``open_task`` writes a task folder (the authoring guide's sound example unless told
otherwise), opens its task.json in the client and waits for the first diagnostics, so a
test starts from a known, published state.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types as lsp
from pytest_lsp import ClientServerConfig, LanguageClient

from tests.rules.conftest import GOOD_MANIFEST, TaskBuilder

SERVER = [sys.executable, "-m", "endstate_lsp"]


def manifest_text(data: dict[str, Any] | None = None) -> str:
    return json.dumps(GOOD_MANIFEST if data is None else data, indent=2) + "\n"


async def initialize(
    client: LanguageClient,
    options: dict[str, Any] | None = None,
    capabilities: lsp.ClientCapabilities | None = None,
) -> None:
    caps = capabilities or lsp.ClientCapabilities(
        window=lsp.WindowClientCapabilities(work_done_progress=True),
        workspace=lsp.WorkspaceClientCapabilities(configuration=True),
        text_document=lsp.TextDocumentClientCapabilities(
            completion=lsp.CompletionClientCapabilities(
                completion_item=lsp.ClientCompletionItemOptions(
                    snippet_support=True, documentation_format=[lsp.MarkupKind.Markdown]
                )
            ),
            publish_diagnostics=lsp.PublishDiagnosticsClientCapabilities(version_support=True),
            hover=lsp.HoverClientCapabilities(content_format=[lsp.MarkupKind.Markdown]),
            document_link=lsp.DocumentLinkClientCapabilities(tooltip_support=True),
        ),
    )
    await client.initialize_session(
        lsp.InitializeParams(capabilities=caps, initialization_options=options or {"debounceMs": 0})
    )


async def wait_for_diagnostics(
    client: LanguageClient, uri: str, version: int | None = None, timeout: float = 15.0
) -> list[lsp.Diagnostic]:
    """Wait for a publishDiagnostics for ``uri`` (with ``version`` when given)."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        params = await asyncio.wait_for(
            client.wait_for_notification(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS),
            max(0.1, deadline - asyncio.get_running_loop().time()),
        )
        if params.uri == uri and (version is None or params.version == version):
            return list(params.diagnostics)


class Session:
    """A client plus helpers to open and edit task.json files."""

    def __init__(self, client: LanguageClient, base: Path) -> None:
        self.client = client
        self.builder = TaskBuilder(base / "suite")
        self.versions: dict[str, int] = {}

    def task(self, *args: Any, **kwargs: Any) -> Path:
        return self.builder(*args, **kwargs)

    async def open(self, root: Path, text: str | None = None) -> tuple[str, list[lsp.Diagnostic]]:
        path = root / "task.json"
        uri = path.as_uri()
        content = path.read_text(encoding="utf-8") if text is None else text
        waiter = asyncio.ensure_future(wait_for_diagnostics(self.client, uri, 1))
        await asyncio.sleep(0)
        self.versions[uri] = 1
        self.client.text_document_did_open(
            lsp.DidOpenTextDocumentParams(
                text_document=lsp.TextDocumentItem(
                    uri=uri, language_id="json", version=1, text=content
                )
            )
        )
        return uri, await waiter

    async def replace(self, uri: str, text: str) -> list[lsp.Diagnostic]:
        version = self.versions[uri] = self.versions[uri] + 1
        waiter = asyncio.ensure_future(wait_for_diagnostics(self.client, uri, version))
        await asyncio.sleep(0)
        self.client.text_document_did_change(
            lsp.DidChangeTextDocumentParams(
                text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=version),
                content_changes=[lsp.TextDocumentContentChangeWholeDocument(text=text)],
            )
        )
        return await waiter


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def client(lsp_client: LanguageClient) -> AsyncIterator[LanguageClient]:
    yield lsp_client
    await lsp_client.shutdown_session()


@pytest.fixture
def session(client: LanguageClient, tmp_path: Path) -> Session:
    return Session(client, tmp_path)


def codes(diags: list[lsp.Diagnostic]) -> list[str]:
    return sorted(str(d.code) for d in diags)


def rng(d: lsp.Diagnostic) -> tuple[int, int, int, int]:
    return (d.range.start.line, d.range.start.character, d.range.end.line, d.range.end.character)


Finder = Callable[[str], tuple[int, int]]
