"""Every verdict graded without walls says so (issue 27, part 1): prove's header, table,
JSON and SARIF, in a run where bubblewrap is not used (``ENDSTATE_WALLS=0``, the same path
as a machine where it cannot start), and none of it in a walled run."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import require_walls

ROOT = Path(__file__).resolve().parents[2]
CLI = str(Path(sys.executable).parent / "endstate-author")


def _prove(task: Path, cache: Path, walls: bool, fmt: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ENDSTATE_AUTHOR_CACHE": str(cache), "ENDSTATE_WALLS": str(int(walls))}
    return subprocess.run(
        [CLI, "prove", str(task), "--sandbox", "local", "--only", "directions",
         "--output-format", fmt], capture_output=True, text=True, env=env, timeout=600)


@pytest.mark.parametrize("walls", [True, False], ids=["walled", "no-walls"])
def test_prove_marks_what_it_graded_without_walls(tmp_path: Path, walls: bool) -> None:
    if walls:
        require_walls()
    task = tmp_path / "fix-semver-precedence"
    shutil.copytree(ROOT / "tasks" / task.name, task)
    # a failing check, so SARIF has a finding to mark: the solution changes one file too few
    (task / "solution" / "semver" / "version.py").unlink()
    cache = tmp_path / "cache"

    text = _prove(task, cache, walls, "text")
    header = text.stderr.splitlines()[0]
    assert ("local (walled by bubblewrap)" in header) is walls, header
    assert ("local (no walls: turned off (ENDSTATE_WALLS=0))" in header) is not walls, header
    assert ("(no walls)" in text.stdout) is not walls, text.stdout

    document = json.loads(_prove(task, cache, walls, "json").stdout)
    [proved] = document["tasks"]
    assert proved["walls"] == ("bubblewrap" if walls else "none")
    ran = [c for c in proved["checks"] if c["outcome"] != "skipped"]
    assert ran and all((c.get("walls") == "none") is not walls for c in ran)

    sarif = json.loads(_prove(task, cache, walls, "sarif").stdout)
    run = sarif["runs"][0]
    assert run["properties"]["walls"] == {task.name: "bubblewrap" if walls else "none"}
    es9 = [r for r in run["results"] if r["ruleId"].startswith("ES9")]
    assert es9 and all((r.get("properties", {}).get("walls") == "none") is not walls
                       for r in es9)
