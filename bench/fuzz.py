"""The long fuzz run: many more damaged task.json documents than the test suite can afford.

Same generator as ``tests/reliability`` (:mod:`tests.support.fuzzgen`: schema
documents, then truncated, keys swapped, types flipped, deep nesting, huge numbers and strings,
invalid UTF-8, NUL bytes, BOMs, duplicate keys, random bytes), through ``lint_task``
in-process and through the real language server over stdio (one full-text edit per input,
waiting for that version's diagnostics).

Prints, per target: inputs run, crashes (an exception, an ES000 finding, an error-level log
message from the server, or the server dying), hangs (no answer within the limit), and the
slowest answer with the kind and size of its input. Exit status 1 when anything crashed or
hung. Run: ``.venv/bin/python bench/fuzz.py --inputs 5000`` (``--target lint|lsp|both``).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import HealthCheck, given, settings

from endstate_author.lint.run import lint_task

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests.support

from tests.support.fuzzgen import task_json_bytes
from tests.support.lspclient import LspClient
from tests.support.tasks import GOOD_MANIFEST, TaskBuilder


@dataclass
class Tally:
    target: str
    inputs: int = 0
    crashes: list[str] = field(default_factory=list)
    hangs: list[str] = field(default_factory=list)
    slowest: float = 0.0
    slowest_input: str = ""
    by_kind: dict[str, int] = field(default_factory=dict)

    def record(self, kind: str, data: bytes, seconds: float) -> None:
        self.inputs += 1
        self.by_kind[kind] = self.by_kind.get(kind, 0) + 1
        if seconds > self.slowest:
            self.slowest, self.slowest_input = seconds, f"{kind}, {len(data)} bytes"

    def line(self) -> str:
        return (
            f"{self.target}: {self.inputs} inputs, {len(self.crashes)} crashes, "
            f"{len(self.hangs)} hangs, slowest answer {self.slowest * 1000:.0f} ms "
            f"({self.slowest_input})"
        )


def fuzz(target: str, inputs: int, limit_s: float, seed: int, work: Path) -> Tally:
    """Run ``inputs`` generated inputs against ``target`` (lint or lsp)."""
    tally = Tally(target)
    root = TaskBuilder(work / target)()
    uri = (root / "task.json").as_uri()
    client = None
    if target == "lsp":
        client = LspClient(cwd=work)
        client.initialize(root=root.parent)
        client.open(uri, json.dumps(GOOD_MANIFEST, indent=2))
        if client.diagnostics(uri, 1, timeout=30.0) is None:
            raise SystemExit("the language server never published its first diagnostics")

    @settings(
        max_examples=inputs,
        deadline=None,
        database=None,
        derandomize=False,
        suppress_health_check=list(HealthCheck),
    )
    @given(task_json_bytes())
    def one(item: tuple[str, bytes]) -> None:
        kind, data = item
        show = f"{kind}: {data[:100]!r}"
        started = time.perf_counter()
        if client is None:
            try:
                found = lint_task(root, text=data)
            except Exception as exc:
                tally.crashes.append(f"{show}: {type(exc).__name__}: {exc}")
                return
            seconds = time.perf_counter() - started
            crashed = [d.message for d in found if d.code == "ES000"]
        else:
            if client.proc.poll() is not None:
                return
            version = client.change(uri, data.decode("utf-8", "surrogateescape"))
            diags = client.diagnostics(uri, version, timeout=max(10.0, limit_s * 5))
            seconds = time.perf_counter() - started
            if diags is None:
                tally.hangs.append(f"{show}: no answer")
                return
            crashed = [d["message"] for d in diags if d.get("code") == "ES000"]
            crashed += client.errors
            client.errors.clear()
        tally.record(kind, data, seconds)
        if crashed:
            tally.crashes.append(f"{show}: {crashed[0][:300]}")
        if seconds > limit_s:
            tally.hangs.append(f"{show}: {seconds:.2f} s")

    random.seed(seed)
    one()
    if client is not None:
        alive = client.proc.poll() is None
        if alive:
            client.change(uri, json.dumps(GOOD_MANIFEST, indent=2))
            alive = bool(
                client.request(
                    "textDocument/documentSymbol", {"textDocument": {"uri": uri}}, timeout=10
                )
                is not None
            )
        code = client.close()
        if not alive or code != 0:
            tally.crashes.append(f"server: alive after the run={alive}, exit code {code}")
    return tally


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inputs", type=int, default=2000, help="inputs per target")
    parser.add_argument("--target", choices=["lint", "lsp", "both"], default="both")
    parser.add_argument("--limit", type=float, default=1.0, help="seconds an answer may take")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    targets = ["lint", "lsp"] if args.target == "both" else [args.target]
    failed = False
    with tempfile.TemporaryDirectory(prefix="endstate-fuzz-") as tmp:
        for target in targets:
            started = time.monotonic()
            tally = fuzz(target, args.inputs, args.limit, args.seed, Path(tmp))
            print(f"{tally.line()} in {time.monotonic() - started:.0f} s")
            print(
                "  inputs by mutation: "
                + ", ".join(f"{k} {v}" for k, v in sorted(tally.by_kind.items()))
            )
            for problem in (tally.crashes + tally.hangs)[:20]:
                print(f"  {problem}")
            failed = failed or bool(tally.crashes or tally.hangs)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
