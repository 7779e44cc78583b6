"""The language server reads prove's stream and report through prove's own wire module
(:mod:`endstate_author.prove.wire`): a newer version is said, never read as if it were its
own (issue 43, item 5)."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest_lsp
from pytest_lsp import ClientServerConfig, LanguageClient

from endstate_author.prove.wire import WIRE_VERSION
from endstate_lsp.prove_report import read_prove
from tests.lsp.conftest import SERVER, Session, initialize
from tests.lsp.test_prove import ended, save, until

NEWER = Path(__file__).with_name("newer_prove.py")
ENV = {**os.environ, "ENDSTATE_LSP_PROVE_CMD": f"{sys.executable} {NEWER}"}


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER, server_env=ENV))
async def newer_client(lsp_client: LanguageClient) -> AsyncIterator[LanguageClient]:
    yield lsp_client
    await lsp_client.shutdown_session()


def test_a_report_of_a_newer_version_is_said_not_read(tmp_path: Path) -> None:
    result = {"check": "solution passes", "group": "directions", "outcome": "fail"}
    report = {"wire_version": WIRE_VERSION + 1, "diagnostics": [],
              "tasks": [{"task": "t", "path": str(tmp_path), "checks": [result]}]}
    read = read_prove(json.dumps(report).encode(), 1, 0.1, tmp_path)
    assert not read.ok
    assert f"wire version {WIRE_VERSION + 1}" in read.summary, read.summary


async def test_the_server_says_it_cannot_read_a_newer_prove(
    newer_client: LanguageClient, tmp_path: Path
) -> None:
    session = Session(newer_client, tmp_path)
    await initialize(newer_client, {"trusted": True, "debounceMs": 0, "sandbox": "local"})
    root = session.task()
    uri, _ = await session.open(root)
    save(newer_client, uri)
    await until(lambda: len(ended(newer_client)) == 1)
    [message] = ended(newer_client).values()
    assert "cannot be read" in message and f"wire version {WIRE_VERSION + 1}" in message
    logged = " ".join(m.message for m in newer_client.log_messages)
    assert f"wire version {WIRE_VERSION + 1}" in logged  # the event, refused as it came
