"""Prove on save, as the author sees it: didSave → the first proof results shown, and → the
full result, against one bare run of the task's test command.

Starts the real server (``python -m endstate_lsp``, trusted, local sandbox) over stdio on a
copy of a shipped task (``tasks/fix-help-text-wrap`` by default) with a fresh prove cache, and
in one run:

* **cold** — the first save: no cache, every check runs (for scale);
* **unchanged** — a save of the task as it was proved (its fixture did not change): the
  cached results are shown at once and no check runs;
* **prompt edit** — prompt.md edited and saved: the fixture is unchanged, only the checks
  that read the prompt (the oracle / guard run through the harness) run again;
* **holdout edit** — a comment added to a holdout test: every check that stages the holdout
  runs again (for scale; the fixture is unchanged here too);
* **new session** — a fresh server on the proved task (the editor reopened): open, save.

"First results shown" is the first ``publishDiagnostics`` of task.json after the didSave
(nothing else changes the buffer here, so it is the proof's: the cached results); "full" is
the last publish before the run's ``$/progress`` end (prove's report, which the server
publishes just before it ends the progress). The bare run is the task's
test command on fixture + solution + holdout, a plain subprocess, the fastest of 9
(``bench/bare.py``: the interpreter run directly, not through a version manager's shim).

Targets (issue 16): first results ≤ 1 s for a task whose fixture did not change; the full
result ≤ 15× one bare run.  Run: ``.venv/bin/python bench/lsp_prove.py [--task DIR]``
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bare import bare_run, precompile
from lsprotocol import types as lsp
from pygls.lsp.client import LanguageClient

ROOT = Path(__file__).resolve().parent.parent


class Server:
    """One server session on one task.json, timing saves."""

    def __init__(self, uri: str) -> None:
        self.uri = uri
        self.client = LanguageClient("bench", "1")
        self.publishes: list[tuple[float, int]] = []  # (when, how many diagnostics)
        self.ends: list[float] = []
        self.logs: list[str] = []
        self.changed = asyncio.Event()

        @self.client.feature(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def on_diags(params: lsp.PublishDiagnosticsParams) -> None:
            if params.uri == self.uri:
                self.publishes.append((time.perf_counter(), len(params.diagnostics)))
                self.changed.set()

        @self.client.feature(lsp.WINDOW_WORK_DONE_PROGRESS_CREATE)
        def on_create(params: lsp.WorkDoneProgressCreateParams) -> None:
            return None

        @self.client.feature(lsp.PROGRESS)
        def on_progress(params: lsp.ProgressParams) -> None:
            value = params.value
            kind = value.get("kind") if isinstance(value, dict) else getattr(value, "kind", None)
            if kind == "end":
                self.ends.append(time.perf_counter())
                self.changed.set()

        @self.client.feature(lsp.WINDOW_LOG_MESSAGE)
        def on_log(params: lsp.LogMessageParams) -> None:
            self.logs.append(params.message)

    async def start(self, env: dict[str, str]) -> None:
        await self.client.start_io(sys.executable, "-m", "endstate_lsp", env=env)
        await self.client.initialize_async(
            lsp.InitializeParams(
                capabilities=lsp.ClientCapabilities(
                    window=lsp.WindowClientCapabilities(work_done_progress=True)
                ),
                # the default debounce (150 ms): prove's updates must not wait for it
                initialization_options={"trusted": True, "sandbox": "local"},
            )
        )
        self.client.initialized(lsp.InitializedParams())

    async def wait(self, predicate: Any, timeout: float = 600) -> None:
        end = time.perf_counter() + timeout
        while not predicate():
            self.changed.clear()
            left = end - time.perf_counter()
            if left <= 0:
                raise TimeoutError("the server did not answer")
            try:
                await asyncio.wait_for(self.changed.wait(), min(left, 1.0))
            except TimeoutError:
                pass

    async def open(self, text: str) -> None:
        self.client.text_document_did_open(
            lsp.DidOpenTextDocumentParams(
                text_document=lsp.TextDocumentItem(
                    uri=self.uri, language_id="json", version=1, text=text
                )
            )
        )
        await self.wait(lambda: self.publishes)

    async def save(self, uri: str | None = None) -> tuple[float, float, str]:
        """Save; (seconds to the first publish, seconds to the full result, what ran)."""
        publishes, ends, logs = len(self.publishes), len(self.ends), len(self.logs)
        sent = time.perf_counter()
        self.client.text_document_did_save(
            lsp.DidSaveTextDocumentParams(
                text_document=lsp.TextDocumentIdentifier(uri=uri or self.uri)
            )
        )
        await self.wait(lambda: len(self.publishes) > publishes)
        first = self.publishes[publishes][0] - sent
        await self.wait(lambda: len(self.ends) > ends)
        end = self.ends[ends]
        # the server publishes prove's report just before it ends the progress (so a client
        # that sees the end already has it): the full result is the last publish by the end
        shown = [t for t, _ in self.publishes[publishes:] if t <= end]
        full = (shown[-1] if shown else end) - sent
        ran = next((m for m in self.logs[logs:] if "check(s) ran" in m), "?")
        return first, full, ran.split(": ", 1)[-1]

    async def stop(self) -> None:
        await self.client.shutdown_async(None)
        self.client.exit(None)
        await self.client.stop()


async def run(task: Path) -> None:
    bare = bare_run(task)
    with tempfile.TemporaryDirectory(prefix="endstate-bench-lsp-prove-") as tmp:
        suite = Path(tmp) / "suite"
        root = suite / task.name
        shutil.copytree(task, root, symlinks=True)
        env = {**os.environ, "ENDSTATE_AUTHOR_CACHE": str(Path(tmp) / "cache")}
        env.pop("ENDSTATE_LSP_PROVE_CMD", None)
        manifest = root / "task.json"
        uri = manifest.as_uri()
        rows: list[tuple[str, float, float, str]] = []

        server = Server(uri)
        await server.start(env)
        try:
            await server.open(manifest.read_text())
            rows.append(("cold (no cache)", *await server.save()))
            rows.append(("unchanged", *await server.save()))
            prompt = root / "prompt.md"
            prompt.write_text(prompt.read_text() + "\nKeep the public API as it is.\n")
            rows.append(("prompt edit", *await server.save(prompt.as_uri())))
            test = sorted((root / "holdout").rglob("test_*.py"))[0]
            test.write_text(test.read_text() + "\n# one more comment\n")
            rows.append(("holdout edit", *await server.save(test.as_uri())))
        finally:
            await server.stop()

        server = Server(uri)
        await server.start(env)
        try:
            await server.open(manifest.read_text())
            rows.append(("new session, unchanged", *await server.save()))
        finally:
            await server.stop()

    print(f"task: {task.relative_to(ROOT) if task.is_relative_to(ROOT) else task}")
    print(f"bare run of its test command (solved tree, fastest of 9): {bare * 1000:.0f} ms")
    print(f"{'save':24} {'first shown':>12} {'full result':>12} {'x bare':>8}  checks run")
    for name, first, full, ran in rows:
        ratio = full / bare if bare else 0.0
        print(f"{name:24} {first:11.3f}s {full:11.3f}s {ratio:7.1f}x  {ran[:60]}")
    same_fixture = ("unchanged", "prompt edit", "new session, unchanged")
    fixture_same = [r for r in rows if r[0] in same_fixture]
    worst_first = max(r[1] for r in fixture_same)
    worst_full = max(r[2] for r in fixture_same)
    print(
        f"fixture unchanged: first results <= {worst_first:.3f} s (target <= 1 s), "
        f"full <= {worst_full / bare if bare else 0:.1f}x bare (target <= 15x): "
        + ("met" if worst_first <= 1.0 and bare and worst_full <= 15 * bare else "NOT met")
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default=str(ROOT / "tasks" / "fix-help-text-wrap"))
    args = parser.parse_args()
    precompile()
    asyncio.run(run(Path(args.task).resolve()))


if __name__ == "__main__":
    main()
