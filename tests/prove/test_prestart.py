"""prove starts the judge's warm interpreters early, and they are the ones the checks use.

A prove of a shipped ``judged_tests`` task in a fresh interpreter (so no earlier test's zygote
is reused): exactly one judge zygote and one sandbox zygote per hash seed (the gradings' 0 and
the solution's second grading's) exist at the end — had the early
start used another key than the gradings, the first grading would have started its own. And
once the process has ended its scratch folder holds nothing (sandboxes deleted in the
background, zygotes' folders). About 2 s.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from endstate_author.prove.variation import seed_of

ROOT = Path(__file__).resolve().parents[2]
TASK = ROOT / "tasks" / "fix-help-text-wrap"

PROGRAM = textwrap.dedent("""
    import json, sys
    from pathlib import Path
    from endstate_author.prove import ProveOptions, prove_task
    from endstate_harness.sandbox.choice import SandboxChoice
    from endstate_harness.sandbox import warm as sandbox_warm
    from endstate_harness.process import zygote as warm

    proof = prove_task(Path(sys.argv[1]), ProveOptions(
        sandbox=SandboxChoice("local", grading=True), use_cache=False,
        only=("visible", "directions")))
    print(json.dumps({
        "outcomes": [c.outcome for c in proof.checks],
        "judges": sorted(json.loads(k[1])["PYTHONHASHSEED"] for k in warm._zygotes),
        "sandboxes": sorted(dict(k[4])["PYTHONHASHSEED"] for k in sandbox_warm._zygotes),
    }))
""")


def test_the_early_zygotes_are_the_ones_the_gradings_use(tmp_path: Path) -> None:
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    env = {**os.environ, "ENDSTATE_SCRATCH": str(scratch), "ENDSTATE_WARM": "1",
           "ENDSTATE_WARM_SANDBOX": "1", "ENDSTATE_AUTHOR_CACHE": str(tmp_path / "cache")}
    proc = subprocess.run([sys.executable, "-c", PROGRAM, str(TASK)], capture_output=True,
                          text=True, env=env, timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["outcomes"] and set(report["outcomes"]) == {"pass"}, report
    # one of each per hash seed: the gradings' (0), and the solution's second grading's
    seeds = sorted(["0", str(seed_of(1))])
    assert report["judges"] == seeds and report["sandboxes"] == seeds, report
    assert os.listdir(scratch) == []
