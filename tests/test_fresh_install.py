"""A fresh ``pip install`` of the built wheel, with no repository file in reach, can say which
sandbox image it uses and prove a shipped task in Docker, with no flag and no variable.

The wheel is built from this checkout and installed into a new virtualenv; pip fetches the
dependencies through its configured index. The task is copied to a temporary folder, and the
commands run there, so nothing of the repository (scripts, tests, sources) can be used.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from endstate_harness.sandbox.docker.daemon import IMAGE_ENV
from tests.test_cli_sandbox import flat, own_image_present

ROOT = Path(__file__).resolve().parent.parent
TASK = "fix-help-text-wrap"

pytestmark = [pytest.mark.slow, pytest.mark.docker, pytest.mark.timeout(900)]


@pytest.fixture
def own_tag(docker_image: str) -> Iterator[str]:
    with own_image_present(docker_image) as tag:
        yield tag


def _run(cmd: list[str | Path], **kwargs: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(c) for c in cmd], capture_output=True, text=True, check=False, **kwargs
    )


def test_the_installed_wheel_proves_a_shipped_task_in_docker(own_tag: str, tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    built = _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", dist, ROOT],
                 timeout=300)
    assert built.returncode == 0, built.stdout + built.stderr
    [wheel] = dist.glob("endstate_author-*.whl")

    venv = tmp_path / "venv"
    made = _run([sys.executable, "-m", "venv", venv], timeout=120)
    assert made.returncode == 0, made.stderr
    installed = _run([venv / "bin" / "pip", "install", "-q", wheel], timeout=600)
    assert installed.returncode == 0, installed.stdout + installed.stderr

    work = tmp_path / "work"
    shutil.copytree(ROOT / "tasks" / TASK, work / TASK)
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in (IMAGE_ENV, "PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")
    }
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["ENDSTATE_AUTHOR_CACHE"] = str(tmp_path / "cache")

    where = _run([venv / "bin" / "python", "-c",
                  "import endstate_author, endstate_harness, endstate_lsp; "
                  "print(endstate_author.__file__, endstate_harness.__file__)"],
                 cwd=work, env=env, timeout=60)
    assert where.returncode == 0 and str(ROOT) not in where.stdout, where.stdout + where.stderr
    assert str(venv) in where.stdout, where.stdout

    author = venv / "bin" / "endstate-author"
    status = _run([author, "sandbox", "status"], cwd=work, env=env, timeout=120)
    assert status.returncode == 0, status.stdout + status.stderr
    assert f"image:   {own_tag}" in status.stdout, status.stdout

    proved = _run([author, "prove", TASK, "--only", "directions"], cwd=work, env=env, timeout=300)
    assert proved.returncode == 0, proved.stdout + proved.stderr
    assert "2 checks passed, 0 failed, 0 unassessed" in flat(proved.stdout), proved.stdout
    assert "local sandbox" not in proved.stderr, proved.stderr
