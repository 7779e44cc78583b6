"""An image without ``python``: eval reports every task as an error, prove says ES908.

The image is the test image with ``python`` removed (committed from a container that ran
``rm`` with no network, removed afterwards), so the test does not depend on whether the
toolkit's image ships a ``python``. The suite's graders run ``python -m unittest``: every
grade exits 127 for want of the interpreter, which says nothing about the tasks.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from endstate_harness.agent.oracle import oracle_provider
from endstate_harness.runner import run_task
from endstate_harness.sandbox.choice import SandboxChoice
from tests.harness.test_runner import make_task

pytestmark = pytest.mark.docker

ROOT = Path(__file__).resolve().parents[2]
UNITTEST = "python -m unittest discover -s tests -t . -q"


@pytest.fixture(scope="module")
def image_without_python(docker_image: str) -> Iterator[str]:
    # deferred: the docker SDK is imported only when this Docker test runs
    from endstate_harness.sandbox.docker.container import connect

    client = connect(timeout_s=30)
    tag = f"endstate-test-no-python:{uuid.uuid4().hex[:12]}"
    container = client.containers.create(
        docker_image,
        [
            "/bin/sh",
            "-c",
            'for p in $(command -v python) /usr/local/bin/python; do rm -f "$p"; done',
        ],
        user="0",
        network_mode="none",
    )
    try:
        container.start()
        assert container.wait(timeout=120)["StatusCode"] == 0
        repository, _, name = tag.partition(":")
        container.commit(repository=repository, tag=name)
    finally:
        container.remove(force=True)
    try:
        probe = client.containers.run(
            tag,
            ["/bin/sh", "-c", "command -v python || echo none"],
            remove=True,
            network_mode="none",
        )
        assert probe.decode().strip() == "none", probe
        yield tag
    finally:
        client.images.remove(tag, force=True)
        client.close()


def _suite(tmp_path: Path) -> Path:
    suite = tmp_path / "suite"
    graders = [
        {"name": "endstate.evals.graders:command_succeeds", "args": {"command": UNITTEST}},
        {
            "name": "endstate.evals.graders:files_unchanged",
            "args": {"paths": ["tests/test_mod.py"]},
        },
    ]
    for task_id in ("add-one", "add-two"):
        make_task(suite, task_id, manifest={"graders": graders})
    return suite


def _cli(*args: str, cache: Path) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [sys.executable, "-m", "endstate_author", *args],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
        env={**os.environ, "ENDSTATE_AUTHOR_CACHE": str(cache)},
    )
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def test_eval_reports_every_task_as_an_error(image_without_python: str, tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = _cli(
        "eval",
        str(_suite(tmp_path)),
        "--provider",
        "oracle",
        "--sandbox",
        "docker",
        "--image",
        image_without_python,
        "--out",
        str(out),
        cache=tmp_path / "cache",
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    data = json.loads((out / "results.json").read_text())
    assert [r["passed"] for r in data["results"]] == [False, False]
    for row in data["results"]:
        assert "`python` is not installed in the sandbox" in row["error"], row
    summary = data["summary"]
    assert summary["assessed"] == 0 and summary["errors"] == 2 and summary["pass_rate"] is None
    report = (out / "report.md").read_text()
    assert "assessed 0, errors 2 (kept out of the pass rate)" in report
    assert "n/a (0/0)" in report


def test_prove_reports_es908_not_es902(image_without_python: str, tmp_path: Path) -> None:
    task = _suite(tmp_path) / "add-one"
    proc = _cli(
        "prove",
        str(task),
        "--sandbox",
        "docker",
        "--image",
        image_without_python,
        "--only",
        "directions",
        "--only",
        "oracle",
        "-o",
        "json",
        cache=tmp_path / "cache",
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    data = json.loads(proc.stdout)
    # the task's own command_succeeds grader also draws the static ES311 warning
    errors = [d for d in data["diagnostics"] if d["severity"] == "error"]
    codes = {d["code"] for d in errors}
    assert codes == {"ES908"}, data["diagnostics"]
    outcomes = {c["check"]: c["outcome"] for c in data["tasks"][0]["checks"]}
    assert set(outcomes.values()) == {"unassessed"}, outcomes
    assert all("`python` is not installed" in d["message"] for d in errors)


def test_with_python_present_the_same_suite_is_assessed(docker_image: str, tmp_path: Path) -> None:
    """The control: where python3 is, a forged 'python3: not found' from the code under test
    is the task failing, never an error."""
    task = make_task(tmp_path, "forged")
    (task.solution / "pkg" / "mod.py").write_text(  # type: ignore[operator]
        "import os, sys\nsys.stderr.write('/bin/sh: 1: python3: not found\\n')\n"
        "sys.stderr.flush()\nos._exit(127)\n"
    )
    result = run_task(
        task, provider_factory=oracle_provider, sandbox=SandboxChoice("docker", docker_image)
    )
    assert not result.passed and not result.error, result
