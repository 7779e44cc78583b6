"""Fuzzing the linter in-process: no crash, no hang, on any bytes a task.json can hold.

Documents come from the shipped schema and are then damaged (``fuzzgen.MUTATIONS``); each goes
through ``lint_task(root, text=bytes)``, the exact entry point the language server uses for an
unsaved buffer. A crash is an exception *or* an ES000 finding (a rule that raised and was
caught: still a bug, since its findings are missing). A hang is an answer slower than
``HANG_S`` (10 s), timed twice before it counts. The speed target (every answer within 1 s) is
a figure that ``bench/fuzz.py`` prints, not a timed test: a loaded CI machine must not fail a
sound build, and a real hang (the quadratic ES101 this found once took minutes) still fails.

Budget: ``$ENDSTATE_FUZZ_EXAMPLES`` (default 300, ~15 s here); ``bench/fuzz.py`` is the long run.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from endstate_author.lint.run import lint_task
from tests.reliability.fuzzgen import task_json_bytes
from tests.rules.conftest import TaskBuilder

EXAMPLES = int(os.environ.get("ENDSTATE_FUZZ_EXAMPLES", "300"))
HANG_S = 10.0


def timed_lint(root: Path, data: bytes) -> tuple[list[str], float]:
    """Codes and seconds; a slow answer is measured again (see the module docstring)."""
    best = float("inf")
    codes: list[str] = []
    for _ in range(2):
        started = time.perf_counter()
        found = lint_task(root, text=data)
        best = min(best, time.perf_counter() - started)
        codes = [f"{d.code}: {d.message}" for d in found if d.code == "ES000"]
        if best <= HANG_S:
            break
    return codes, best


@pytest.fixture(scope="module")
def task_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return TaskBuilder(tmp_path_factory.mktemp("fuzz-lint"))()


FIXED: list[tuple[str, bytes]] = [
    ("empty", b""),
    ("nul only", b"\x00" * 64),
    ("bom only", b"\xef\xbb\xbf"),
    ("utf-16 bom", b"\xff\xfe{\x00}\x00"),
    ("lone surrogate", b'{"id": "\xed\xa0\x80"}'),
    ("escaped lone surrogate", b'{"id": "\\ud800", "graders": [{"name": "\\udfff"}]}'),
    ("deep arrays", b"[" * 200_000 + b"]" * 200_000),
    ("deep objects", b'{"a":' * 100_000 + b"1" + b"}" * 100_000),
    ("unclosed deep", b'{"graders": ' + b"[" * 100_000),
    ("huge int", b'{"max_steps": ' + b"9" * 100_000 + b"}"),
    ("huge exponent", b'{"timeout_s": 1e999999}'),
    ("nan", b'{"timeout_s": NaN, "max_steps": Infinity}'),
    ("huge string", b'{"id": "' + b"x" * 1_000_000 + b'"}'),
    ("many keys", b"{" + b",".join(b'"k%d": %d' % (i, i) for i in range(5_000)) + b"}"),
    ("many graders", b'{"graders": [' + b",".join([b'{"name": "a:b"}'] * 20_000) + b"]}"),
    ("control chars", bytes(range(32)) + b"{}"),
    ("crlf", b'{\r\n"id": "x",\r\n"graders": []\r\n}'),
]


RUN_KNOWN = bool(os.environ.get("ENDSTATE_RUN_KNOWN_FAILURES"))
KNOWN_SLOW: dict[str, str] = {}


def _fixed_cases() -> list[object]:
    cases: list[object] = []
    for name, data in FIXED:
        marks = []
        if name in KNOWN_SLOW and not RUN_KNOWN:
            marks.append(
                pytest.mark.skip(
                    reason=KNOWN_SLOW[name] + " (ENDSTATE_RUN_KNOWN_FAILURES=1 runs it)"
                )
            )
        cases.append(pytest.param(name, data, id=name, marks=marks))
    return cases


@pytest.mark.parametrize("name,data", _fixed_cases())
def test_lint_survives_known_nasty_inputs(task_root: Path, name: str, data: bytes) -> None:
    crashes, seconds = timed_lint(task_root, data)
    assert not crashes, f"{name}: a rule crashed: {crashes}"
    assert seconds <= HANG_S, f"{name}: lint took {seconds:.2f} s: a hang (bound {HANG_S} s)"


def test_lint_fuzzed_task_json(task_root: Path) -> None:
    seen: dict[str, Any] = {"inputs": 0, "slowest": 0.0, "slowest_kind": ""}
    failures: list[str] = []

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,  # nothing written into the user's checkout
        suppress_health_check=list(HealthCheck),
    )
    @given(task_json_bytes())
    def one(item: tuple[str, bytes]) -> None:
        kind, data = item
        try:
            crashes, seconds = timed_lint(task_root, data)
        except Exception as exc:  # reported below with the input, not raised mid-run
            failures.append(f"{kind}: {type(exc).__name__}: {exc} on {data[:120]!r}")
            return
        seen["inputs"] += 1
        if seconds > seen["slowest"]:
            seen["slowest"], seen["slowest_kind"] = seconds, f"{kind}, {len(data)} bytes"
        if crashes:
            failures.append(f"{kind}: {crashes[0][:300]} on {data[:120]!r}")
        if seconds > HANG_S:
            failures.append(f"{kind}: {seconds:.2f} s on {len(data)} bytes {data[:80]!r}")

    one()
    print(
        f"\nlint fuzz: {seen['inputs']} inputs, {len(failures)} failures, slowest answer "
        f"{seen['slowest'] * 1000:.0f} ms ({seen['slowest_kind']})",
        file=sys.stderr,
    )
    assert seen["inputs"] >= EXAMPLES // 2, "hypothesis ran far fewer inputs than asked"
    assert not failures, "\n".join(failures[:10])
