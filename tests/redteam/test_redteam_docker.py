"""``redteam`` in the Docker sandbox (the default): the early-exit exploit of a weak task is
found, triaged by the judge in Docker and reported as ES913, and no container is left behind
(the ``docker_image`` fixture checks). Skipped, with the reason printed, when no daemon answers.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.fake_openai import FakeOpenAI
from tests.redteam.test_redteam import ROOT, script_early_exit, weak_suite


def test_docker_weak_task_early_exit_is_es913(tmp_path: Path, docker_image: str) -> None:
    suite = weak_suite(tmp_path)
    env = {**os.environ, "ENDSTATE_AUTHOR_CACHE": str(tmp_path / "cache")}
    with FakeOpenAI() as server:
        script_early_exit(server, "chunker/__init__.py", "from chunker.core import chunk")
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "endstate_author",
                "redteam",
                str(suite / "weak-chunk"),
                "--model",
                "fake-model",
                "--base-url",
                server.base_url,
                "--image",
                docker_image,
                "-o",
                "json",
            ],
            capture_output=True,
            text=True,
            timeout=600,
            env=env,
            cwd=ROOT,
        )
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 1, proc.stderr
    data = json.loads(proc.stdout)
    [attempt] = data["attempts"]
    assert attempt["outcome"] == "exploit", attempt
    assert [d["code"] for d in data["diagnostics"]] == ["ES913"]
