"""What prove shows while it works, on stderr: a person waiting must see it move."""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Sequence
from typing import IO, Any

from endstate_author.engine.textsafe import json_text, one_line
from endstate_author.prove.model import CheckResult, TaskProof
from endstate_author.prove.wire import done_event, sandbox_event, start_event, task_event
from endstate_harness.sandbox.choice import SandboxChoice


def task_line(proof: TaskProof) -> str:
    """``proved TASK: 40 passed, 1 failed, 0 unassessed, 2 skipped (3.1s)`` — one task done."""
    counts = {o: sum(c.outcome == o for c in proof.checks) for o in _OUTCOMES}
    parts = ", ".join(f"{counts[o]} {_WORD[o]}" for o in _OUTCOMES)
    where = "cached" if proof.cached else f"{proof.seconds:.1f}s"
    verdict = "FINDINGS" if counts["fail"] else ("NOT PROVED" if counts["unassessed"] else "ok")
    return one_line(f"proved {proof.task_id}: {verdict}: {parts} ({where})")


_OUTCOMES = ("pass", "fail", "unassessed", "skipped")
_WORD = {"pass": "passed", "fail": "failed", "unassessed": "unassessed", "skipped": "skipped"}


class LineProgress:
    """One flushed line per task on ``out`` (no terminal)."""

    def __init__(self, out: IO[str] | None = None) -> None:
        self.out = out or sys.stderr

    def __enter__(self) -> LineProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def check_started(self, task_id: str, check: str) -> None:
        return None

    def check_done(self, task_id: str, check: str, result: CheckResult) -> None:
        return None

    def task_done(self, proof: TaskProof) -> None:
        print(task_line(proof), file=self.out, flush=True)


class LiveProgress:
    """A live display on a terminal: tasks done of all, the task being proved, the checks
    running in it and how many of its checks have ended; a finished task's line stays."""

    def __init__(self, total: int, console: Any) -> None:
        # deferred: rich.live is drawn only on a terminal; CI and editors skip its import
        from rich.live import Live

        self.total = total
        self.console = console
        self.done = 0
        self.lock = threading.Lock()
        self.running: dict[str, dict[str, float]] = {}
        self.ended: dict[str, int] = {}
        self.live = Live(console=console, transient=True, refresh_per_second=8, get_renderable=self)

    def __enter__(self) -> LiveProgress:
        self.live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.live.__exit__(None, None, None)

    def __call__(self) -> Any:
        # deferred with rich.live, above
        from rich.text import Text

        now = time.monotonic()
        lines = [f"proving: {self.done}/{self.total} task(s) done"]
        with self.lock:
            for task_id, checks in self.running.items():
                lines.append(one_line(f"  {task_id}: {self.ended.get(task_id, 0)} check(s) ended"))
                oldest = sorted(checks.items(), key=lambda kv: kv[1])[:6]
                for name, since in oldest:
                    lines.append(one_line(f"    running {name} ({now - since:.0f}s)"))
                if len(checks) > 6:
                    lines.append(f"    and {len(checks) - 6} more")
        return Text("\n".join(lines))

    def check_started(self, task_id: str, check: str) -> None:
        with self.lock:
            self.running.setdefault(task_id, {})[check] = time.monotonic()

    def check_done(self, task_id: str, check: str, result: CheckResult) -> None:
        with self.lock:
            self.running.get(task_id, {}).pop(check, None)
            self.ended[task_id] = self.ended.get(task_id, 0) + 1

    def task_done(self, proof: TaskProof) -> None:
        with self.lock:
            self.done += 1
            self.running.pop(proof.task_id, None)
            self.ended.pop(proof.task_id, None)
        self.console.print(task_line(proof), markup=False, highlight=False)


class JsonProgress:
    """One JSON object per line on ``out``, flushed, for an editor reading the pipe: the
    events of :mod:`endstate_author.prove.wire` (:class:`~endstate_author.prove.wire.Event`
    says what each one means), each with its ``wire_version``."""

    def __init__(self, out: IO[str] | None = None) -> None:
        self.out = out or sys.stderr
        self.lock = threading.Lock()

    def __enter__(self) -> JsonProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def _say(self, event: dict[str, Any]) -> None:
        # a detail quoting the end state: data kept exactly, no control reaches a terminal
        line = json_text(json.dumps(event, ensure_ascii=False)) + "\n"
        with self.lock:  # checks end on several threads: one whole line at a time
            self.out.write(line)
            self.out.flush()

    def sandbox(self, spec: SandboxChoice) -> None:
        self._say(sandbox_event(spec))

    def check_started(self, task_id: str, check: str) -> None:
        self._say(start_event(task_id, check))

    def check_done(self, task_id: str, check: str, result: CheckResult) -> None:
        self._say(done_event(task_id, check, result))

    def task_done(self, proof: TaskProof) -> None:
        self._say(task_event(proof))


class QuietProgress(LineProgress):
    def task_done(self, proof: TaskProof) -> None:
        return None


def choose(targets: Sequence[object], console: Any, *, quiet: bool) -> LineProgress | LiveProgress:
    """Live on a terminal, lines otherwise, nothing with ``--quiet``."""
    if quiet:
        return QuietProgress()
    if console.is_terminal:
        return LiveProgress(len(targets), console)
    return LineProgress()
