"""One cause, one message (issue 46): a task lint already rejects for a reason every check
shares is not proved check by check, and the same bad input gets the same answer from lint,
prove and eval.

Each case is a task written here (tests/rules/conftest's sound chunker task with one thing
broken), run through the real CLI in the local sandbox.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from endstate_author.engine.diagnostics import escaped
from endstate_author.prove.messages import diagnostics
from endstate_author.prove.model import CheckResult
from endstate_harness.fdtree import remove_tree
from tests.prove.test_prove import HARDENED, STRICT_HOLDOUT, manifest
from tests.rules.conftest import TaskBuilder, good


def run(command: str, *args: str, cache: Path) -> tuple[int, str, str]:
    env = {**os.environ, "ENDSTATE_AUTHOR_CACHE": str(cache)}
    proc = subprocess.run(
        [sys.executable, "-m", "endstate_author", command, *args],
        capture_output=True, text=True, timeout=600, env=env,
    )
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, proc.stdout, proc.stderr


def prove_json(path: Path, cache: Path) -> tuple[int, dict[str, Any]]:
    rc, out, err = run("prove", "--sandbox", "local", "-o", "json", str(path), cache=cache)
    try:
        return rc, json.loads(out)
    except json.JSONDecodeError:
        pytest.fail(f"prove printed no JSON (exit {rc}): {out}\n{err}")


def lint_json(path: Path, cache: Path) -> tuple[int, list[dict[str, Any]]]:
    rc, out, _ = run("lint", "--output-format", "json", str(path), cache=cache)
    data = json.loads(out)
    return rc, data if isinstance(data, list) else data["diagnostics"]


def errors(found: list[dict[str, Any]]) -> list[tuple[str, int, int]]:
    return sorted((d["code"], d["line"], d["column"]) for d in found if d["severity"] == "error")


def _misspelt() -> dict[str, Any]:
    graders = [dict(g) for g in HARDENED]
    graders[0] = {"name": graders[0]["name"], "args": {"start_dirr": "tests"}}
    return good(graders=graders)


def test_a_task_lint_rejects_is_reported_once_by_its_lint_finding(
    build: TaskBuilder, cache: Path, tmp_path: Path
) -> None:
    """A misspelt grader argument, a link out of the tree, a fifo: each was 60-90 unassessed
    rows repeating one sentence and ES908's "start Docker"; now lint's own finding, once, and
    the other tasks of the suite are proved as usual."""
    cases: dict[str, str] = {}
    task = build(_misspelt(), name="misspelt", holdout=STRICT_HOLDOUT)
    cases[task.name] = "ES206"
    task = build(manifest(), name="link-out", holdout=STRICT_HOLDOUT)
    (task / "fixture" / "leak").symlink_to("/etc/hostname")
    cases[task.name] = "ES410"
    task = build(manifest(), name="fifo", holdout=STRICT_HOLDOUT)
    os.mkfifo(task / "fixture" / "pipe")
    cases[task.name] = "ES414"
    build(manifest(), name="sound", holdout=STRICT_HOLDOUT)
    suite = tmp_path / "suite"
    rc, data = prove_json(suite, cache)
    assert rc == 1, data
    assert "ES908" not in json.dumps(data) and "start Docker" not in json.dumps(data)
    proofs = {Path(t["path"]).name: t for t in data["tasks"]}
    for name, code in cases.items():
        [check] = proofs[name]["checks"]
        assert check["check"] == "load" and check["outcome"] == "fail", check
        assert f"({code} at " in check["detail"] and "nothing else was checked" in check["detail"]
        mine = [d for d in data["diagnostics"] if f"/{name}/" in d["file"]]
        assert [d["code"] for d in mine] == [code], mine
        # the same finding, at the same place, as lint gives
        _, linted = lint_json(suite / name, cache)
        same = [d for d in linted if d["code"] == code]
        assert [(d["line"], d["column"], d["message"]) for d in mine] == [
            (d["line"], d["column"], d["message"]) for d in same
        ]
    sound = proofs["sound"]["checks"]
    assert len(sound) > 5 and all(c["outcome"] in ("pass", "skipped") for c in sound), sound


def test_near_misses_are_proved_check_by_check(build: TaskBuilder, cache: Path) -> None:
    """A link that stays inside the tree and a name that is not UTF-8 keep no check from
    running: the task is proved as usual (the name is ES414 beside the checks)."""
    task = build(manifest(), name="inside-link", holdout=STRICT_HOLDOUT)
    (task / "fixture" / "alias.py").symlink_to("chunker/core.py")
    rc, data = prove_json(task, cache)
    checks = data["tasks"][0]["checks"]
    assert len(checks) > 5 and not any(c["check"] == "load" for c in checks), checks
    task = build(manifest(), name="latin1", holdout=STRICT_HOLDOUT)
    (task / "fixture").joinpath(os.fsdecode(b"caf\xe9.txt")).write_text("x\n")
    rc, data = prove_json(task, cache)
    assert rc == 1, data  # ES414 is an error beside the checks
    checks = data["tasks"][0]["checks"]
    assert len(checks) > 5 and not any(c["check"] == "load" for c in checks), checks
    assert [d["code"] for d in data["diagnostics"] if d["code"] != "ES311"] == ["ES414"]


def test_a_task_json_that_is_a_folder_is_es001_however_it_is_named(
    build: TaskBuilder, cache: Path, tmp_path: Path
) -> None:
    task = build(manifest(), name="folder-manifest")
    (task / "task.json").unlink()
    (task / "task.json").mkdir()
    suite = tmp_path / "suite"
    for path in (suite, task, task / "task.json"):
        rc, found = lint_json(path, cache)
        assert rc == 1 and [d["code"] for d in found] == ["ES001"], (path, found)
        rc, data = prove_json(path, cache)
        assert rc == 1 and [d["code"] for d in data["diagnostics"]] == ["ES001"], (path, data)
        rc, out, err = run("eval", str(suite if path == suite else task), "--provider",
                           "oracle", "--sandbox", "local", cache=cache)
        assert rc == 2 and "ES001" in out + err and "no task.json" not in out + err


def test_a_prompt_that_is_not_utf8_is_lint_es109_at_its_byte(
    build: TaskBuilder, cache: Path
) -> None:
    task = build(manifest(), name="latin1-prompt", prompt=None)
    (task / "prompt.md").write_bytes(b"Make the failing\ntest pass, caf\xe9.\n")
    rc, found = lint_json(task, cache)
    assert rc == 1 and errors(found) == [("ES109", 2, 15)], found
    rc, data = prove_json(task, cache)
    assert rc == 1 and errors(data["diagnostics"]) == [("ES109", 2, 15)], data
    assert "ES000" not in json.dumps(data)
    rc, out, err = run("eval", str(task), "--provider", "oracle", "--sandbox", "local",
                       cache=cache)
    assert rc == 2 and "ES109" in out + err and "codec can't decode" not in out + err
    # near miss: a prompt in UTF-8 with the same letter
    (task / "prompt.md").write_text("Make the failing\ntest pass, caf\u00e9.\n", encoding="utf-8")
    rc, found = lint_json(task, cache)
    assert not errors(found), found


def test_a_missing_fixture_is_es401_alone_everywhere(build: TaskBuilder, cache: Path) -> None:
    """No follow-ons computed against an empty tree (a pinned test "not in the fixture",
    tests/ "without __init__.py")."""
    task = build(manifest(), name="no-fixture", holdout=STRICT_HOLDOUT)
    for entry in sorted((task / "fixture").rglob("*"), reverse=True):
        entry.rmdir() if entry.is_dir() else entry.unlink()
    (task / "fixture").rmdir()
    rc, found = lint_json(task, cache)
    assert rc == 1 and [d["code"] for d in found if d["severity"] == "error"] == ["ES401"]
    rc, data = prove_json(task, cache)
    assert rc == 1 and [d["code"] for d in data["diagnostics"]] == ["ES401"], data
    rc, out, err = run("eval", str(task), "--provider", "oracle", "--sandbox", "local",
                       cache=cache)
    assert rc == 2 and "ES401" in out + err and "ES501" not in out + err and "ES406" not in err


def test_a_name_that_is_not_utf8_is_rendered_one_way(build: TaskBuilder, cache: Path) -> None:
    """``caf\\xe9`` in text, JSON and SARIF: never a raw byte, a lone surrogate or a repr."""
    task = build(manifest(), name="odd-link", holdout=STRICT_HOLDOUT)
    (task / "fixture").joinpath(os.fsdecode(b"caf\xe9")).symlink_to("/etc/hostname")
    for fmt in ("text", "json", "sarif", "github"):
        rc, out, _ = run("lint", "--output-format", fmt, str(task), cache=cache)
        assert rc == 1 and "caf\\xe9" in out.replace("\\\\", "\\"), (fmt, out)
        assert "\udce9" not in out and "\\udce9" not in out and "PosixPath" not in out, fmt
    rc, data = prove_json(task, cache)
    text = json.dumps(data, ensure_ascii=False)
    assert "\\udce9" not in text and "caf\\\\xe9" in text, text
    assert escaped(os.fsdecode(b"caf\xe9")) == "caf\\xe9"
    assert escaped("caf\u00e9") == "caf\u00e9" and escaped("\ud800") == "\\xed\\xa0\\x80"


def test_survivors_of_a_holdout_that_never_runs_are_counted_under_es903(tmp_path: Path) -> None:
    (tmp_path / "task.json").write_text('{"graders": []}\n')
    results = [
        CheckResult("holdout sentinel", "holdout", "fail", detail="never run", code="ES903"),
        *(CheckResult(f"mutant m{i}", "mutants", "fail", detail=f"survived {i}", code="ES911",
                      path="x.py", line=i + 1) for i in range(14)),
    ]
    found = diagnostics(tmp_path, results)
    assert [d.code for d in found] == ["ES903"]
    assert "14 mutant(s) of the solution (ES911) survive, not listed apart" in found[0].message
    # near miss: without ES903 each survivor is its own finding
    assert [d.code for d in diagnostics(tmp_path, results[1:])] == ["ES911"] * 14


def test_a_task_tree_too_deep_is_es414_once_and_eval_still_runs_it(
    build: TaskBuilder, cache: Path
) -> None:
    """A fixture 1,100 folders deep: lint's ES414 names it; prove reports that, once, before
    any walk of the task (the cache's key, the mutants) meets Python's recursion limit; eval
    runs the task (the sandbox copies it by descriptors) and its content hash does not crash.
    A tree 90 folders deep is a near miss: proved as usual."""
    task = build(manifest(), name="deep", holdout=STRICT_HOLDOUT)
    folder = task / "fixture"
    for _ in range(1100):
        folder = folder / "d"
        os.mkdir(folder)
    (folder / "x.txt").write_text("x\n")
    try:
        _deep_task_answers(task, cache)
    finally:  # pytest's own clean-up of old temporary folders recurses: never leave it this
        remove_tree(task / "fixture" / "d")
    near = build(manifest(), name="ninety", holdout=STRICT_HOLDOUT)
    folder = near / "fixture"
    for _ in range(90):
        folder = folder / "d"
        os.mkdir(folder)
    (folder / "x.txt").write_text("x\n")
    _, found = lint_json(near, cache)
    assert not [d for d in found if d["code"] == "ES414"], found


def _deep_task_answers(task: Path, cache: Path) -> None:
    rc, found = lint_json(task, cache)
    deep = [d for d in found if d["code"] == "ES414"]
    assert rc == 1 and len(deep) == 1 and "101 folders deep" in deep[0]["message"], found
    rc, data = prove_json(task, cache)
    assert rc == 1 and [d["code"] for d in data["diagnostics"]] == ["ES414"], data
    assert "Recursion" not in json.dumps(data)
    rc, out, err = run("eval", str(task), "--provider", "oracle", "--sandbox", "local",
                       cache=cache)
    assert rc == 0 and "internal error" not in err and "pass" in out, out + err


def test_tables_in_a_pipe_never_cut_an_identifier(build: TaskBuilder, cache: Path) -> None:
    """Issue 46 item 4: prove's table written to a pipe is as wide as its widest row, so a
    long test name in a check's detail stays whole (it was folded at 80 columns)."""
    name = "test_capacity_must_be_positive_whatever_the_size_of_the_input_list"
    holdout = {"tests/test_holdout_chunk.py": (
        "import unittest\n\nfrom chunker import chunk\n\n\n"
        "class HoldoutLongNamedChunkingBehaviourTest(unittest.TestCase):\n"
        f"    def {name}(self):\n        self.assertEqual(chunk([1, 2, 3], 2), [[1, 2]])\n"
    )}
    task = build(manifest(), name="long-names", holdout=holdout)
    rc, out, err = run("prove", "--sandbox", "local", "--only", "directions", str(task),
                       cache=cache)
    assert rc == 1 and "Traceback" not in err
    assert f"HoldoutLongNamedChunkingBehaviourTest.{name}" in out, out
