"""Any file name, any task (issue 27, part 8): an odd entry in one task's folder is a finding
for that task, in lint and in prove, and never stops the others.

Before this change a name that is not UTF-8 in one task's ``solution/`` ended the whole
prove run with an internal error (UnicodeEncodeError), a fifo in a task's ``solution/`` hung
prove and a fifo in ``fixture/`` or ``holdout/`` hung lint.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from endstate_author.prove import cache
from endstate_author.prove.model import ProveOptions
from endstate_author.prove.run import prove_paths
from endstate_harness.sandbox.choice import SandboxChoice

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "tasks" / "fix-semver-precedence"
CLI = [str(Path(sys.executable).parent / "endstate-author")]


def _copy(suite: Path, name: str) -> Path:
    task = suite / name
    shutil.copytree(SOURCE, task)
    manifest = task / "task.json"
    manifest.write_text(manifest.read_text().replace(SOURCE.name, name))
    return task


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    """Three tasks: a name that is not UTF-8 in solution/, a fifo in fixture/, and a sound
    one beside them."""
    root = tmp_path / "suite"
    root.mkdir()
    bad_name = _copy(root, "a-bad-name")
    with open(os.fsencode(bad_name / "solution") + b"/notes-\xff.txt", "w") as fh:
        fh.write("a note\n")
    fifo = _copy(root, "b-fifo")
    os.mkfifo(fifo / "fixture" / "pipe")
    _copy(root, "c-sound")
    return root


def _run(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=600, env=env,
                          errors="replace")


def test_prove_and_lint_report_each_odd_task_and_prove_the_others(
    suite: Path, tmp_path: Path
) -> None:
    env = {**os.environ, "ENDSTATE_AUTHOR_CACHE": str(tmp_path / "cache"), "ENDSTATE_WALLS": "1"}
    lint = _run("lint", "--no-cache", "--output-format", "json", str(suite), env=env)
    assert lint.returncode == 1, lint.stderr
    findings = json.loads(lint.stdout)
    where = {(d["code"], Path(d["file"]).parent.name) for d in findings}
    assert {("ES414", "a-bad-name"), ("ES414", "b-fifo")} <= where
    assert not any(d["code"] == "ES000" for d in findings)

    for fmt in ("json", "sarif"):
        proc = _run("prove", "--no-cache", "--sandbox", "local", "--output-format", fmt,
                    str(suite), env=env)
        assert proc.returncode == 1, proc.stderr  # findings, not an internal error (2)
        assert "internal error" not in proc.stderr
        document = json.loads(proc.stdout)  # valid JSON, odd names escaped
        if fmt == "json":
            tasks = {t["task"]: t for t in document["tasks"]}
            assert set(tasks) == {"a-bad-name", "b-fifo", "c-sound"}
            assert all(c["outcome"] in ("pass", "skipped") for c in tasks["c-sound"]["checks"])
            codes = {(d["code"], Path(d["file"]).parent.name) for d in document["diagnostics"]}
            assert {("ES414", "a-bad-name"), ("ES414", "b-fifo")} <= codes
            assert not any(task == "c-sound" for _, task in codes)
        else:
            messages = [r["message"]["text"] for r in document["runs"][0]["results"]]
            assert any("notes-\\xff.txt" in m for m in messages)


def test_one_task_s_internal_error_does_not_stop_the_others(
    suite: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A failure inside prove itself (injected here: the cache's fingerprint raises for one
    task) is that task's unassessed check (ES908), and every other task is proved."""
    monkeypatch.setenv("ENDSTATE_AUTHOR_CACHE", str(tmp_path / "cache"))
    real = cache.fingerprint

    def broken(task, options, inputs=None):  # type: ignore[no-untyped-def]
        if task.id == "a-bad-name":
            raise RuntimeError("injected failure")
        return real(task, options, inputs)

    monkeypatch.setattr(cache, "fingerprint", broken)
    shutil.rmtree(suite / "b-fifo")
    # with the cache (in this test's own folder): --no-cache never asks for a fingerprint
    proofs = prove_paths([suite], ProveOptions(sandbox=SandboxChoice("local").for_grading(),
                                               use_cache=True))
    by_id = {p.task_id: p for p in proofs}
    assert set(by_id) == {"a-bad-name", "c-sound"}
    [failed] = by_id["a-bad-name"].checks
    assert failed.outcome == "unassessed" and "injected failure" in failed.detail
    assert any(d.code == "ES414" for d in by_id["a-bad-name"].diagnostics)
    assert all(c.outcome in ("pass", "skipped") for c in by_id["c-sound"].checks)
