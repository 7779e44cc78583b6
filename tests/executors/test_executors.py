"""Choosing an executor, and the content-addressed task archive a cluster node receives.

Fast and engine-free: the command line's validation (bad input is one message and exit 2),
and that an archive is deterministic, names its bytes, carries the suite's own grader module,
and unpacks into a one-task suite the node can load. The cluster itself is exercised in
``test_ray_cluster.py``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from endstate_author.executors import ExecutorError, choose_executor
from endstate_author.executors.archive import pack, remove, unpack
from endstate_author.executors.node import MissingInput, check_inputs
from endstate_author.prove import cache
from endstate_author.prove.inputs import read_inputs
from endstate_author.prove.model import ProveOptions
from endstate_harness.task import load_task
from tests.support.probed import build_probed_suite
from tests.support.tasks import TaskBuilder, good

REPO = Path(__file__).resolve().parents[2]


def test_choose_executor(monkeypatch: pytest.MonkeyPatch) -> None:
    assert not choose_executor("local", None).remote
    assert choose_executor("ray", None).address is None
    assert choose_executor("ray", "10.0.0.1:6379").address == "10.0.0.1:6379"
    monkeypatch.setenv("RAY_ADDRESS", "head:6379")
    assert choose_executor("ray", "auto").address == "head:6379"
    monkeypatch.delenv("RAY_ADDRESS")
    with pytest.raises(ExecutorError, match=r"\$RAY_ADDRESS"):
        choose_executor("ray", "auto")
    with pytest.raises(ExecutorError, match="needs --executor ray"):
        choose_executor("local", "head:6379")
    with pytest.raises(ExecutorError, match="must be one of"):
        choose_executor("spark", None)


@pytest.mark.parametrize("command", ["prove", "eval"])
def test_an_address_without_the_ray_executor_is_one_message(command: str) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "endstate_author", command, str(REPO / "tasks"), "--address", "x:1"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert "needs --executor ray" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_the_archive_is_content_addressed_and_carries_suite_graders(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "house_graders.py").write_text(
        "from endstate.evals.graders import GradeResult\n\n"
        "def always(sandbox, **kw):\n    return GradeResult(True, 'ok')\n"
    )
    manifest = good()
    manifest["graders"] = [*manifest["graders"], {"name": "house_graders:always"}]
    root = TaskBuilder(suite)(manifest, name="t1")
    task = load_task(root)
    first, again = pack(task, suite), pack(task, suite)
    assert first.digest == again.digest and first.data == again.data
    (root / "prompt.md").write_text("Something else.\n")
    assert pack(load_task(root), suite).digest != first.digest
    scratch, copy = unpack(first)
    try:
        assert copy.name == "t1" and (copy.parent / "house_graders.py").is_file()
        for path in root.rglob("*"):
            twin = copy / path.relative_to(root)
            if path.name == "prompt.md":
                continue
            assert twin.exists(), path
            if path.is_file():
                assert twin.read_bytes() == path.read_bytes()
        assert load_task(copy).id == task.id
    finally:
        remove(scratch)
    assert not scratch.exists()
    damaged = type(first)(first.digest, first.folder, first.data[:-1] + b"x")
    with pytest.raises(ValueError, match="damaged"):
        unpack(damaged)


def test_the_archive_carries_every_input_a_proof_reads(tmp_path: Path) -> None:
    """The node's copy of a task reads the inputs the user's folder does, digest for digest:
    the suite's saved probes and its configuration (found above the suite) included; a copy
    that lacks one is refused before any check runs (issue 47)."""
    suite = build_probed_suite(tmp_path / "user")
    (suite / "house_graders.py").write_text(
        "from endstate.evals.graders import GradeResult\n"
        "from house_helpers import VERDICT\n\n"
        "def always(sandbox, **kw):\n    return GradeResult(VERDICT, 'ok')\n"
    )
    (suite / "house_helpers.py").write_text("VERDICT = True\n")
    root = suite / "chunk-in-process"
    manifest = json.loads((root / "task.json").read_text())
    manifest["graders"] = [*manifest["graders"], {"name": "house_graders:always"}]
    (root / "task.json").write_text(json.dumps(manifest))
    task = load_task(root)
    expected = read_inputs(task)
    # a helper the grader module imports is read too (the judge imports it)
    assert {"suite-probes", "config", "module:house_graders.py", "module:house_helpers.py"} <= set(
        expected
    )
    scratch, copy = unpack(pack(task, suite))
    try:
        twin = load_task(copy)
        assert read_inputs(twin) == expected
        check_inputs(twin, expected)  # nothing missing: no error
        options = ProveOptions()
        assert cache.fingerprint(twin, options) == cache.fingerprint(task, options)
        shutil.rmtree(copy.parent / "probes")
        with pytest.raises(MissingInput, match="suite-probes"):
            check_inputs(load_task(copy), expected)
    finally:
        remove(scratch)


def test_the_cache_key_names_content_never_this_machines_paths(tmp_path: Path) -> None:
    """The same suite in two places is one key; another configuration, another probe, another
    grader module or another module it imports is another key (each changes what a proof
    reports)."""
    first = build_probed_suite(tmp_path / "a")
    (first / "house_graders.py").write_text(
        "from house_helpers import VERDICT\n\ndef always(sandbox, **kw):\n    return VERDICT\n"
    )
    (first / "house_helpers.py").write_text("VERDICT = None\n")
    root = first / "chunk-in-process"
    manifest = json.loads((root / "task.json").read_text())
    manifest["graders"] = [*manifest["graders"], {"name": "house_graders:always"}]
    (root / "task.json").write_text(json.dumps(manifest))
    shutil.copytree(tmp_path / "a", tmp_path / "b", symlinks=True)
    second = tmp_path / "b" / "suite"
    options = ProveOptions()

    def key(suite: Path) -> str:
        return cache.fingerprint(load_task(suite / "chunk-in-process"), options)

    seen = {key(first)}
    assert key(second) in seen
    (tmp_path / "b" / "pyproject.toml").write_text(
        '[tool.endstate-author]\nseverity = { ES311 = "warning" }\n'
    )
    seen.add(key(second))
    (second / "house_graders.py").write_text(
        "from house_helpers import VERDICT\n\ndef always(sandbox, **kw):\n    return 1\n"
    )
    seen.add(key(second))
    (second / "house_helpers.py").write_text("VERDICT = 1\n")
    seen.add(key(second))
    shutil.rmtree(second / "probes" / "solution-of-fix-semver-precedence")
    seen.add(key(second))
    assert len(seen) == 5
