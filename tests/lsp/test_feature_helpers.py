"""The protocol side's pure helpers, without a server: plain-text snippets, the code lens
title, and the per-task state's caches."""

from __future__ import annotations

from pathlib import Path

import pytest

from endstate_lsp.features.code_lens import title
from endstate_lsp.features.completion import strip_snippet
from endstate_lsp.settings import Settings
from endstate_lsp.state import STALE_S, ProveResult, ProveRun, TaskState, TaskStates


@pytest.mark.parametrize(
    ("snippet", "plain"),
    [
        ('"paths": ["${1}"]', '"paths": [""]'),
        ('"max_steps": ${1:25}', '"max_steps": 25'),
        ('"exact": ${3|true,false|}', '"exact": true'),
        ('{"min": ${1:1}, "max": ${2:1}}$0', '{"min": 1, "max": 1}'),
        ('"\\$schema"', '"$schema"'),
        ('"a\\\\b\\}"', '"a\\b}"'),
    ],
)
def test_strip_snippet(snippet: str, plain: str) -> None:
    assert strip_snippet(snippet) == plain


def test_code_lens_title(tmp_path: Path) -> None:
    state = TaskState(tmp_path)
    untrusted, trusted = Settings(), Settings()
    trusted.update({"trusted": True})
    assert title(untrusted, None) == "prove on save is off: the workspace is not trusted"
    assert title(trusted, None) == "prove: not run yet (save to run)"
    trusted.update({"proveOnSave": False})
    assert title(trusted, state) == "prove on save is off"
    state.proof = ProveResult(True, "proved: 3 checks passed, 1.0 s", 1.0)
    assert title(untrusted, state) == "proved: 3 checks passed, 1.0 s"
    state.prove = ProveRun(token="t")
    assert title(untrusted, state) == "prove: running…"


def test_task_state_caches_until_files_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = [100.0]
    monkeypatch.setattr("endstate_lsp.state.time.monotonic", lambda: clock[0])
    tasks = TaskStates()
    root = tmp_path / "t1"
    root.mkdir()
    state = tasks[root]
    assert tasks[root] is state and tasks.get(tmp_path) is None

    graders = tasks.graders(root)
    config = state.lint_config()
    trees = state.listings(watching=False)
    trees["fixture"] = {}
    clock[0] += STALE_S / 2
    assert tasks.graders(root) is graders
    assert state.lint_config() is config
    assert state.listings(watching=False) is trees

    clock[0] += STALE_S  # not watching: listings and graders expire, the config does not
    assert tasks.graders(root) is not graders
    assert state.listings(watching=False) == {}
    assert state.lint_config() is config

    tasks.watching = True  # watching: nothing expires until a file changes
    graders, trees = tasks.graders(root), state.listings(watching=True)
    clock[0] += 100 * STALE_S
    assert tasks.graders(root) is graders and state.listings(watching=True) is trees

    state.proof = ProveResult(True, "proved", 1.0)
    state.published = {"file:///x"}
    tasks.forget_files(root)
    assert tasks.graders(root) is not graders
    assert state.lint_config() is not config
    assert state.listings(watching=True) == {}
    assert state.proof is not None and state.published == {"file:///x"}  # kept
