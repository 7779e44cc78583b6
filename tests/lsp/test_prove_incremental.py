"""Incremental prove on save, end to end: the real server over stdio running the real prove.

One session walks the life of a task: a first full proof; a save of the unchanged task shows
the cached findings before anything runs and runs no check; a prompt.md edit runs no check; a
holdout edit runs only the checks that read the holdout, streaming their results (several
publishes for one save) until the findings say the new answer; a newer save cancels a running
proof, whose processes are gone and whose results never show. What ran is read off the
server's own log (one line per run, from prove's per-check events), never off the clock.

prove runs the directions, holdout and visible groups only (``--jobs 1``, so checks end one
by one): ~4 proofs of four checks, ~25 s on the loaded 2-core machine.
"""

from __future__ import annotations

import asyncio
import atexit
import json
import os
import re
import shutil
import sys
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest_lsp
from lsprotocol import types as lsp
from pytest_lsp import ClientServerConfig, LanguageClient

from endstate_harness.sandbox.docker.daemon import PID_LABEL, connect
from tests.lsp.conftest import SERVER, Session, initialize
from tests.lsp.test_prove import ended, save, until
from tests.support import procs

PROVE = (
    f"{sys.executable} -m endstate_author prove --only directions --only holdout "
    "--only visible --jobs 1"
)
_CACHE = tempfile.mkdtemp(prefix="endstate-lsp-incremental-cache-")
atexit.register(shutil.rmtree, _CACHE, True)  # the prove cache these servers share
ENV = {
    **os.environ,
    "ENDSTATE_LSP_PROVE_CMD": PROVE,
    "ENDSTATE_AUTHOR_CACHE": _CACHE,
}

HOLDOUT_FILE = "tests/test_holdout_chunk.py"


def holdout(expected: str, mark: str | None = None, sleep: float = 0.0) -> str:
    """A holdout test of chunk([1], 5); the solution passes it when ``expected`` is [[1]].
    With ``mark``, every run takes it as its name (found from the host whatever walls it is
    behind: :mod:`tests.support.procs`) and sleeps ``sleep`` seconds first."""
    slow = ""
    if mark is not None:
        slow = (
            f"        import time\n"
            f"        open('/proc/self/comm', 'w').write({mark!r})\n"
            f"        time.sleep({sleep})\n"
        )
    return (
        "import unittest\n\nfrom chunker import chunk\n\n\n"
        "class HoldoutTest(unittest.TestCase):\n"
        "    def test_single(self):\n"
        f"{slow}"
        f"        self.assertEqual(chunk([1], 5), {expected})\n"
    )


class Published(dict):  # type: ignore[type-arg]
    """The client's diagnostics by URI, recording every publish (and how many prove runs
    had ended when it came) instead of keeping only the last."""

    def __init__(self, client: LanguageClient) -> None:
        super().__init__()
        self.client = client
        self.log: list[tuple[str, list[str], int]] = []

    def __setitem__(self, uri: str, diags: Any) -> None:
        self.log.append((uri, [str(d.code) for d in diags], len(ended(self.client))))
        super().__setitem__(uri, diags)


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER, server_env=ENV))
async def client(lsp_client: LanguageClient) -> AsyncIterator[LanguageClient]:
    yield lsp_client
    await lsp_client.shutdown_session()


def runs(client: LanguageClient) -> list[list[str]]:
    """The checks each finished prove run really ran (the server's log line per run)."""
    out = []
    for params in client.log_messages:
        found = re.search(r"check\(s\) ran, \d+ answered from the cache: (\[.*\])$", params.message)
        if found:
            out.append(json.loads(found.group(1)))
    return out


def pids_of_runs(client: LanguageClient) -> list[int]:
    return [
        int(m.group(1))
        for p in client.log_messages
        if (m := re.search(r"prove: started, pid (\d+)", p.message))
    ]


async def proved(client: LanguageClient, count: int) -> list[str]:
    """Wait for the ``count``-th prove run to end; the checks it ran."""
    await until(lambda: len(runs(client)) >= count, timeout=240)
    return runs(client)[count - 1]


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


async def test_incremental_proof_on_save(client: LanguageClient, tmp_path: Path) -> None:
    published = client.diagnostics = Published(client)
    session = Session(client, tmp_path)
    await initialize(client, {"trusted": True, "debounceMs": 0, "sandbox": "local"})
    root = session.task(holdout={HOLDOUT_FILE: holdout("[[2]]")})  # the solution fails it
    uri, _ = await session.open(root)

    def codes_now() -> list[str]:
        return [str(d.code) for d in client.diagnostics.get(uri, [])]

    # a first, full proof: every check runs; the solution fails the holdout (ES902)
    save(client, uri)
    first = await proved(client, 1)
    every = ["fixture fails", "solution passes", "holdout sentinel",
             "same verdict under another hash seed and test order"]
    assert sorted(first) == sorted([*every, "visible tests fail on the fixture"]), first
    await until(lambda: "ES902" in codes_now())

    # (a) nothing changed: the cached ES902 is published before the run ends, and no check runs
    mark = len(published.log)
    save(client, uri)
    assert await proved(client, 2) == []
    await until(lambda: len(ended(client)) == 2)
    during = [codes for u, codes, done in published.log[mark:] if u == uri and done < 2]
    assert during and "ES902" in during[0], published.log[mark:]

    # (b) prompt.md is read by none of these checks: saving it re-runs nothing
    (root / "prompt.md").write_text("Make the failing test pass; do not edit tests/.\n")
    save(client, (root / "prompt.md").as_uri())
    assert await proved(client, 3) == []
    await until(lambda: len(ended(client)) == 3)  # its last publish in before (c) begins
    assert "ES902" in codes_now()

    # (c) the holdout fixed: only the checks that stage the holdout run, and ES902 goes;
    # (d) their results stream: several publishes before the run's report
    (root / "holdout" / HOLDOUT_FILE).write_text(holdout("[[1]]"))
    mark = len(published.log)
    save(client, uri)
    again = await proved(client, 4)
    assert sorted(again) == sorted(every)  # not the visible check: it runs without the holdout
    await until(lambda: len(ended(client)) == 4)
    await until(lambda: "ES902" not in codes_now())
    during = [codes for u, codes, done in published.log[mark:] if u == uri and done < 4]
    assert len(during) >= 2, published.log[mark:]  # cached results, then as checks ended
    assert "ES902" not in during[0]  # the stale ES902 is never shown once the holdout changed

    # (e) a slow holdout, then a newer save before its proof ends: the older run is cancelled,
    # its test processes are stopped, and its (passing) results never replace the newer ES902
    mark = procs.token()
    (root / "holdout" / HOLDOUT_FILE).write_text(holdout("[[1]]", mark, sleep=60))
    save(client, uri)
    await until(lambda: bool(procs.marked(mark)), timeout=120)  # the slow check is running
    slow = procs.marked(mark)
    (root / "holdout" / HOLDOUT_FILE).write_text(holdout("[[3]]"))
    save(client, uri)
    await proved(client, 5)
    await until(lambda: len(ended(client)) == 6)
    assert "cancelled by a newer save" in ended(client).values()
    await until(lambda: "ES902" in codes_now())
    started = pids_of_runs(client)
    assert len(started) == 6
    # stopped, not finished: the slow test sleeps for a minute
    await until(lambda: not any(alive(p) for p in [*slow, started[4]]), timeout=15)
    await asyncio.sleep(1)
    assert "ES902" in codes_now()
    assert len(runs(client)) == 5  # the cancelled run reported nothing
    # each run's temporary folders went with it, the cancelled one's too
    tmp = Path(tempfile.gettempdir())
    await until(lambda: not list(tmp.glob("endstate-lsp-run-*")), timeout=15)


async def test_cancelled_run_cannot_overwrite(client: LanguageClient, tmp_path: Path) -> None:
    """A save while the cache is read for the previous one: only the newest run shows."""
    session = Session(client, tmp_path)
    await initialize(client, {"trusted": True, "debounceMs": 0, "sandbox": "local"})
    root = session.task()
    uri, _ = await session.open(root)
    for _ in range(3):  # three saves in a row: two are superseded at once
        save(client, uri)
    await proved(client, 1)
    await until(lambda: len(ended(client)) >= 1)
    await asyncio.sleep(0.5)
    assert len(runs(client)) == 1  # the superseded runs showed and reported nothing
    started = pids_of_runs(client)
    assert 1 <= len(started) <= 3
    await until(lambda: not any(alive(p) for p in started), timeout=10)


DOCKER_ENV = {
    **ENV,
    "ENDSTATE_LSP_PROVE_CMD": f"{sys.executable} -m endstate_author prove --only directions",
}


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER, server_env=DOCKER_ENV))
async def docker_client(lsp_client: LanguageClient) -> AsyncIterator[LanguageClient]:
    yield lsp_client
    await lsp_client.shutdown_session()


async def test_docker_run_cancelled_by_a_newer_save_leaves_no_container(
    docker_image: str, docker_client: LanguageClient, tmp_path: Path
) -> None:
    """In Docker (the image prove resolves is the one ``docker_image`` found): a proof
    cancelled mid-check by a newer save takes its containers with it. The ``docker_image``
    fixture also fails the test on any sandbox container left behind. About 20 s."""
    client = docker_client
    session = Session(client, tmp_path)
    await initialize(client, {"trusted": True, "debounceMs": 0, "sandbox": "docker"})
    slow = holdout("[[1]]").replace(
        "    def test_single(self):\n",
        "    def test_single(self):\n        import time\n        time.sleep(30)\n",
    )
    root = session.task(holdout={HOLDOUT_FILE: slow})
    uri, _ = await session.open(root)
    save(client, uri)

    def checking() -> bool:
        return any(
            isinstance(r, lsp.WorkDoneProgressReport) and "checking:" in (r.message or "")
            for reports in client.progress_reports.values()
            for r in reports
        )

    await until(checking, timeout=120)
    await asyncio.sleep(2)  # the slow holdout test is running in its container
    (root / "holdout" / HOLDOUT_FILE).write_text(holdout("[[3]]"))
    save(client, uri)
    await proved(client, 1)
    assert "cancelled by a newer save" in ended(client).values()
    await until(lambda: "ES902" in [str(d.code) for d in client.diagnostics.get(uri, [])])
    cancelled = pids_of_runs(client)[0]
    assert not alive(cancelled)
    docker = connect(timeout_s=10)
    try:
        left = docker.containers.list(
            all=True, sparse=True, filters={"label": f"{PID_LABEL}={cancelled}"}
        )
    finally:
        docker.close()
    assert not left, f"the cancelled proof left containers: {[c.id for c in left]}"
