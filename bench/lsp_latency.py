"""Language server latency: didChange → matching publishDiagnostics, and cold start.

Starts the real server (``python -m endstate_lsp``) over stdio, opens the authoring guide's
sound task.json, then applies ``--edits`` edits (debounceMs 0) one after another, each
waiting for the diagnostics tagged with its version. Prints p50/p95 of that latency and the
cold start: process spawn to the first diagnostics of the opened file.

Targets: p95 <= 20 ms, cold start <= 1 s.  Run: ``.venv/bin/python bench/lsp_latency.py``
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from lsprotocol import types as lsp
from pygls.lsp.client import LanguageClient

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests.support

from tests.support.tasks import GOOD_MANIFEST, TaskBuilder


async def run(edits: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        root = TaskBuilder(Path(tmp) / "suite")()
        uri = (root / "task.json").as_uri()
        client = LanguageClient("bench", "1")
        arrived: dict[int, float] = {}
        waiters: dict[int, asyncio.Future[float]] = {}

        @client.feature(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def on_diags(params: lsp.PublishDiagnosticsParams) -> None:
            if params.uri == uri and params.version is not None:
                now = time.perf_counter()
                arrived.setdefault(params.version, now)
                fut = waiters.get(params.version)
                if fut is not None and not fut.done():
                    fut.set_result(now)

        loop = asyncio.get_running_loop()
        t0 = time.perf_counter()
        await client.start_io(sys.executable, "-m", "endstate_lsp")
        try:
            await client.initialize_async(
                lsp.InitializeParams(
                    capabilities=lsp.ClientCapabilities(),
                    initialization_options={"debounceMs": 0},
                )
            )
            client.initialized(lsp.InitializedParams())
            waiters[1] = loop.create_future()
            text = json.dumps(GOOD_MANIFEST, indent=2) + "\n"
            client.text_document_did_open(
                lsp.DidOpenTextDocumentParams(
                    text_document=lsp.TextDocumentItem(
                        uri=uri, language_id="json", version=1, text=text
                    )
                )
            )
            cold = await asyncio.wait_for(waiters[1], 30) - t0
            samples = []
            for i in range(edits):
                version = i + 2
                waiters[version] = loop.create_future()
                steps = 20 + i % 7
                new = text.replace('"max_steps": 20', f'"max_steps": {steps}')
                if i % 5 == 0:
                    new = new.replace('"bug-fix"', '"bug-fi"')  # an ES103 now and then
                sent = time.perf_counter()
                client.text_document_did_change(
                    lsp.DidChangeTextDocumentParams(
                        text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=version),
                        content_changes=[lsp.TextDocumentContentChangeWholeDocument(text=new)],
                    )
                )
                got = await asyncio.wait_for(waiters[version], 30)
                samples.append((got - sent) * 1000)
            await client.shutdown_async(None)
            client.exit(None)
        finally:
            await client.stop()
    samples.sort()
    return {
        "edits": edits,
        "p50_ms": statistics.median(samples),
        "p95_ms": samples[int(0.95 * (len(samples) - 1))],
        "max_ms": samples[-1],
        "cold_start_s": cold,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--edits", type=int, default=200)
    args = parser.parse_args()
    result = asyncio.run(run(args.edits))
    print(
        f"didChange -> publishDiagnostics over {result['edits']} edits: "
        f"p50 {result['p50_ms']:.1f} ms, p95 {result['p95_ms']:.1f} ms, "
        f"max {result['max_ms']:.1f} ms"
    )
    print(f"cold start to first diagnostics: {result['cold_start_s']:.2f} s")
    ok = result["p95_ms"] <= 20 and result["cold_start_s"] <= 1.0
    print("targets (p95 <= 20 ms, cold <= 1 s):", "met" if ok else "NOT met")


if __name__ == "__main__":
    main()
