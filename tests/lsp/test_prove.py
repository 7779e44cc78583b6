"""Prove on save against a small real prove process (tests/lsp/fake_prove.py), and safety."""

from __future__ import annotations

import asyncio
import atexit
import os
import shutil
import sys
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

import pytest_lsp
from lsprotocol import types as lsp
from pytest_lsp import ClientServerConfig, LanguageClient

from tests.lsp.conftest import SERVER, Session, initialize
from tests.rules.conftest import GOOD_MANIFEST

FAKE = Path(__file__).with_name("fake_prove.py")
ENV = {**os.environ, "ENDSTATE_LSP_PROVE_CMD": f"{sys.executable} {FAKE}"}


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER, server_env=ENV))
async def prove_client(lsp_client: LanguageClient) -> AsyncIterator[LanguageClient]:
    yield lsp_client
    await lsp_client.shutdown_session()


def save(client: LanguageClient, uri: str) -> None:
    client.text_document_did_save(
        lsp.DidSaveTextDocumentParams(text_document=lsp.TextDocumentIdentifier(uri=uri))
    )


async def until(predicate, timeout: float = 20.0) -> None:  # type: ignore[no-untyped-def]
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not predicate():
        assert loop.time() < end, "timed out"
        await asyncio.sleep(0.05)


def ended(client: LanguageClient) -> dict[object, str]:
    out = {}
    for token, reports in client.progress_reports.items():
        for r in reports:
            if isinstance(r, lsp.WorkDoneProgressEnd):
                out[token] = r.message or ""
    return out


async def test_prove_on_save_progress_merge_and_lens(
    prove_client: LanguageClient, tmp_path: Path
) -> None:
    session = Session(prove_client, tmp_path)
    await initialize(prove_client, {"trusted": True, "debounceMs": 0, "sandbox": "local"})
    root = session.task()
    uri, first = await session.open(root)
    assert "ES902" not in [d.code for d in first]
    save(prove_client, uri)
    await until(lambda: len(ended(prove_client)) == 1)
    [(token, message)] = ended(prove_client).items()
    kinds = [type(r).__name__ for r in prove_client.progress_reports[token]]
    assert kinds[0] == "WorkDoneProgressBegin" and kinds[-1] == "WorkDoneProgressEnd"
    reports = [
        r.message
        for r in prove_client.progress_reports[token]
        if isinstance(r, lsp.WorkDoneProgressReport)
    ]
    assert "checking: solution passes" in reports
    assert message.startswith("prove failed: solution-passes")
    # a save publishes several times (cached results, then as checks end): the last counts
    await until(lambda: "ES902" in [d.code for d in prove_client.diagnostics.get(uri, [])])
    [es902] = [d for d in prove_client.diagnostics[uri] if d.code == "ES902"]
    text = (root / "task.json").read_text()
    line = next(i for i, t in enumerate(text.splitlines()) if "no_new_skips" in t)
    assert es902.range.start.line <= line <= es902.range.end.line  # at the grader it names
    started = list((root.parent / "prove-runs").glob("*.started"))
    assert len(started) == 1 and "--sandbox local" in started[0].read_text()
    lenses = await prove_client.text_document_code_lens_async(
        lsp.CodeLensParams(text_document=lsp.TextDocumentIdentifier(uri=uri))
    )
    assert lenses and lenses[0].command is not None
    assert lenses[0].command.title.startswith("prove failed: solution-passes")
    assert lenses[0].command.command == "endstate-author.prove"


async def test_second_save_cancels_first(prove_client: LanguageClient, tmp_path: Path) -> None:
    session = Session(prove_client, tmp_path)
    await initialize(prove_client, {"trusted": True, "debounceMs": 0})
    root = session.task()
    (root.parent / "prove-delay").write_text("4")
    runs = root.parent / "prove-runs"
    uri, _ = await session.open(root)
    save(prove_client, uri)
    await until(lambda: len(list(runs.glob("*.started"))) == 1)
    first_pid = int(next(runs.glob("*.started")).stem)
    (root.parent / "prove-delay").write_text("0.2")
    save(prove_client, uri)
    await until(lambda: len(ended(prove_client)) == 2)
    messages = sorted(ended(prove_client).values())
    assert messages[0] == "cancelled by a newer save"
    assert messages[1].startswith("prove failed")
    assert not (runs / f"{first_pid}.finished").exists()
    await asyncio.sleep(0.2)
    try:
        os.kill(first_pid, 0)
        alive = Path(f"/proc/{first_pid}/stat").read_text().split()[2] != "Z"
    except ProcessLookupError:
        alive = False
    assert not alive, "the first prove process is still running"


async def test_untrusted_runs_no_suite_code(prove_client: LanguageClient, tmp_path: Path) -> None:
    session = Session(prove_client, tmp_path)
    await initialize(prove_client, {"debounceMs": 0})  # trusted defaults to false
    marker = tmp_path / "imported.marker"
    suite = tmp_path / "suite"
    suite.mkdir(parents=True)
    (suite / "mygraders.py").write_text(
        f"from pathlib import Path\nPath({str(marker)!r}).write_text('imported')\n\n"
        "def check(sandbox, *, path: str):\n    '''A suite grader.'''\n    return None\n"
    )
    data = dict(
        GOOD_MANIFEST,
        graders=[*GOOD_MANIFEST["graders"], {"name": "mygraders:check", "args": {"path": "x"}}],
    )
    root = session.task(data)
    uri, _ = await session.open(root)
    text = (root / "task.json").read_text()
    line = next(i for i, t in enumerate(text.splitlines()) if "mygraders:check" in t)
    col = text.splitlines()[line].index("mygraders:check") + 2
    hov = await prove_client.text_document_hover_async(
        lsp.HoverParams(
            text_document=lsp.TextDocumentIdentifier(uri=uri),
            position=lsp.Position(line=line, character=col),
        )
    )
    assert hov is not None and "A suite grader." in str(hov.contents)  # read, not imported
    save(prove_client, uri)
    await asyncio.sleep(1.5)
    assert not marker.exists()
    assert not (root.parent / "prove-runs").exists()
    lenses = await prove_client.text_document_code_lens_async(
        lsp.CodeLensParams(text_document=lsp.TextDocumentIdentifier(uri=uri))
    )
    assert lenses and "not trusted" in (lenses[0].command.title if lenses[0].command else "")


_CACHE = tempfile.mkdtemp(prefix="endstate-lsp-prove-cache-")
atexit.register(shutil.rmtree, _CACHE, True)  # the prove cache these servers share
REAL_ENV = {
    **os.environ,
    # the real prove, limited to the directions so the test stays quick on a busy machine
    "ENDSTATE_LSP_PROVE_CMD": f"{sys.executable} -m endstate_author prove --only directions",
    "ENDSTATE_AUTHOR_CACHE": _CACHE,
}


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER, server_env=REAL_ENV))
async def real_prove_client(lsp_client: LanguageClient) -> AsyncIterator[LanguageClient]:
    yield lsp_client
    await lsp_client.shutdown_session()


async def test_prove_on_save_with_the_real_prove(
    real_prove_client: LanguageClient, tmp_path: Path
) -> None:
    """The real `endstate-author prove` as the server runs it: its ES902 lands on the grader."""
    session = Session(real_prove_client, tmp_path)
    await initialize(real_prove_client, {"trusted": True, "debounceMs": 0, "sandbox": "local"})
    wrong = {"chunker/core.py": "def chunk(items, size):\n    return [items]\n"}
    root = session.task(solution=wrong)
    uri, first = await session.open(root)
    assert "ES902" not in [d.code for d in first]
    save(real_prove_client, uri)
    await until(lambda: len(ended(real_prove_client)) == 1, timeout=180)
    [(token, message)] = ended(real_prove_client).items()
    reports = [
        r.message
        for r in real_prove_client.progress_reports[token]
        if isinstance(r, lsp.WorkDoneProgressReport)
    ]
    assert any(m and "checking:" in m for m in reports), reports
    assert message.startswith("prove failed"), message

    def published() -> list[str]:
        return [d.code for d in real_prove_client.diagnostics.get(uri, [])]  # type: ignore[misc]

    await until(lambda: "ES902" in published(), timeout=30)


async def test_a_task_that_does_not_load_shows_its_cause_once_after_prove(
    real_prove_client: LanguageClient, tmp_path: Path
) -> None:
    """prove reports an unknown key with lint's code (ES101); lint already shows it, so the
    editor shows it once, and no ES908 ("start Docker") appears."""
    import json  # deferred: only this test writes a manifest by hand

    session = Session(real_prove_client, tmp_path)
    await initialize(real_prove_client, {"trusted": True, "debounceMs": 0, "sandbox": "local"})
    root = session.task({**GOOD_MANIFEST, "max_stepz": 5})
    uri, first = await session.open(root)
    assert [d.code for d in first].count("ES101") == 1
    save(real_prove_client, uri)
    await until(lambda: len(ended(real_prove_client)) == 1, timeout=180)
    [message] = ended(real_prove_client).values()
    assert message.startswith("prove failed"), message
    await asyncio.sleep(0.5)  # the merge after prove's end is published at once
    codes = [d.code for d in real_prove_client.diagnostics.get(uri, [])]  # type: ignore[misc]
    assert codes.count("ES101") == 1 and "ES908" not in codes, codes
    assert json.loads((root / "task.json").read_text())["max_stepz"] == 5  # nothing rewritten
