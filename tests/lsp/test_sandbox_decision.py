"""The server asks the one sandbox choice (``resolve_sandbox``) for ``auto`` before prove
has said what it chose, and its setting offers what every command's ``--sandbox`` takes
(issue 43, item 4)."""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

import pytest_lsp
from pytest_lsp import ClientServerConfig, LanguageClient

from endstate_harness.sandbox.choice import DEFAULT_KIND, SandboxKind
from endstate_lsp.settings import PROBLEMS, SANDBOXES, Settings
from tests.lsp.conftest import SERVER, Session, initialize
from tests.lsp.test_prove import save, until

SLEEPY = Path(__file__).with_name("sleepy_prove.py")
_CACHE = tempfile.mkdtemp(prefix="endstate-lsp-decision-cache-")
atexit.register(shutil.rmtree, _CACHE, True)
ENV = {
    **os.environ,
    # no daemon can listen here: auto is the local sandbox, decided without asking Docker
    "DOCKER_HOST": f"unix://{_CACHE}/no-docker.sock",
    "ENDSTATE_AUTHOR_CACHE": _CACHE,
    "ENDSTATE_LSP_PROVE_CMD": f"{sys.executable} {SLEEPY} --only directions",
}


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER, server_env=ENV))
async def sleepy_client(lsp_client: LanguageClient) -> AsyncIterator[LanguageClient]:
    yield lsp_client
    await lsp_client.shutdown_session()


def test_the_setting_offers_what_every_command_takes() -> None:
    assert SANDBOXES == tuple(kind.value for kind in SandboxKind)
    assert Settings().sandbox == DEFAULT_KIND
    assert all(f'"{kind}"' in PROBLEMS["sandbox"] for kind in SANDBOXES)


async def test_auto_finds_the_cached_proof_before_prove_says_anything(
    sleepy_client: LanguageClient, tmp_path: Path
) -> None:
    """A proof made by the CLI with ``--sandbox auto`` is shown at the first save of a
    session set to ``auto``, while the new prove has said nothing yet: the server looked the
    cache up under what the one choice decides, as the CLI did."""
    session = Session(sleepy_client, tmp_path)
    wrong = {"chunker/core.py": "def chunk(items, size):\n    return [items]\n"}
    root = session.task(solution=wrong)
    proved = subprocess.run(
        [sys.executable, "-m", "endstate_author", "prove", str(root), "--sandbox", "auto",
         "--only", "directions", "-o", "json"],
        capture_output=True, text=True, env=ENV, timeout=600,
    )
    assert proved.returncode == 1 and "ES902" in proved.stdout, proved.stderr
    assert "no Docker daemon answers" in proved.stderr  # auto, decided: local
    await initialize(sleepy_client, {"trusted": True, "debounceMs": 0, "sandbox": "auto"})
    uri, first = await session.open(root)
    assert "ES902" not in [d.code for d in first]
    save(sleepy_client, uri)

    def published() -> list[str]:
        return [str(d.code) for d in sleepy_client.diagnostics.get(uri, [])]

    await until(lambda: "ES902" in published(), timeout=60)
