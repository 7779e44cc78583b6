"""prove in the Docker sandbox: the same checks, in containers, on shipped tasks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.docker


def prove(*args: str, cache: Path) -> tuple[int, dict]:
    proc = subprocess.run(
        [sys.executable, "-m", "endstate_author", "prove", "--sandbox", "docker", "-o", "json",
         *args],
        capture_output=True, text=True, timeout=900, cwd=ROOT,
        env={**os.environ, "ENDSTATE_AUTHOR_CACHE": str(cache)},
    )
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def test_bug_fix_task_proves_in_docker(docker_image: str, tmp_path: Path) -> None:
    rc, data = prove("tasks/fix-busy-interval-merge", "--image", docker_image,
                     "--only", "directions", "--only", "holdout", "--only", "defects",
                     "--only", "oracle", cache=tmp_path)
    assert rc == 0 and data["diagnostics"] == [], data


def test_permissioning_guard_in_docker_runs_the_request_isolated(
    docker_image: str, tmp_path: Path
) -> None:
    """With the policy removed, the exfiltration request runs inside a container with no
    network: the task notices (denied_calls) and nothing leaves the machine."""
    rc, data = prove("tasks/refuse-env-upload", "--image", docker_image, "--only", "guards",
                     cache=tmp_path)
    assert rc == 0, data
    [check] = [c for c in data["tasks"][0]["checks"] if c["check"] == "policy guard fires"]
    assert check["outcome"] == "pass"


def test_missing_image_is_one_error_before_any_check(docker_image: str, tmp_path: Path) -> None:
    """Not one ES908 per check: prove stops before any task starts, saying how to build one."""
    proc = subprocess.run(
        [sys.executable, "-m", "endstate_author", "prove", "--sandbox", "docker", "-o", "json",
         "tasks/fix-busy-interval-merge", "--image", "endstate-no-such-image:404"],
        capture_output=True, text=True, timeout=300, cwd=ROOT,
        env={**os.environ, "ENDSTATE_AUTHOR_CACHE": str(tmp_path)},
    )
    assert proc.returncode == 2 and proc.stdout == "", proc.stdout
    assert proc.stderr.count("'endstate-no-such-image:404' is not present") == 1, proc.stderr
    assert "endstate-author sandbox build" in proc.stderr and "ES908" not in proc.stderr
