"""Every grading of a full prove forks from a warm interpreter (issue 48, target 2).

Why this is held by a test: the judge and the code under test used to start as fresh
interpreters for every grading but the mutants' (~60 ms each, 3-8 gradings a task); they now
fork, each grading its own judge and its own child, from the warm judge and the warm sandbox
interpreter the mutants' batches use (:mod:`endstate_harness.process.zygote`,
:mod:`endstate_harness.sandbox.warm`). A change that made one check group start its judge or
its child fresh again would pass every other test and only cost time, so it is counted here.

A full prove (every check group: directions, holdout and its sentinel, defects, the crash
guard's harness runs, every probe, visible, mutants in batches) of a shipped task with a
recovery block and defects, in a fresh interpreter (so no earlier test's zygote is reused),
with the real judge and the real sandbox; the functions that start the judge and the child
are wrapped to record what they started (they still start it). Nothing may start fresh,
the environment probe included: a failing grading's question whether ``python3`` is there
is answered by the warm interpreter of it having started
(:func:`endstate_harness.sandbox.warm.started`). About 5-10 s.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TASK = ROOT / "tasks" / "recover-journal-store"

PROGRAM = textwrap.dedent("""
    import json, sys, threading
    from pathlib import Path
    import endstate_harness.graders.environment as environment
    import endstate_harness.graders.judge.grader as grader
    import endstate_harness.sandbox.local as local
    from endstate_harness.process.zygote import WarmProcess
    from endstate_harness.sandbox.warm import WarmRun
    from endstate_author.prove import ProveOptions, prove_task
    from endstate_harness.sandbox.choice import SandboxChoice

    seen = {"judges": [], "channels": [], "commands": [], "probes": []}
    lock = threading.Lock()

    def record(kind, value):
        with lock:
            seen[kind].append(value)

    real_judge = grader._start_judge
    def start_judge(*args, **kwargs):
        judge = real_judge(*args, **kwargs)
        record("judges", isinstance(judge, WarmProcess))
        return judge
    grader._start_judge = start_judge

    real_channel = local._start_channel
    def start_channel(box, argv, live, limit):
        channel = real_channel(box, argv, live, limit)
        record("channels", isinstance(channel.proc, WarmRun))
        return channel
    local._start_channel = start_channel

    real_warm = local.start_warm
    def start_warm(run, cwd, **kwargs):
        proc = real_warm(run, cwd, **kwargs)
        record("commands", proc is not None)
        return proc
    local.start_warm = start_warm

    real_ask = environment._ask
    def ask(sandbox, program, timeout_s):
        record("probes", program)
        return real_ask(sandbox, program, timeout_s)
    environment._ask = ask

    proof = prove_task(Path(sys.argv[1]), ProveOptions(
        sandbox=SandboxChoice("local", grading=True), use_cache=False, jobs=2, mutants=8))
    seen["outcomes"] = {c.check: c.outcome for c in proof.checks}
    print(json.dumps(seen))
""")


def test_every_grading_of_a_full_prove_forks_warm(tmp_path: Path) -> None:
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    env = {**os.environ, "ENDSTATE_SCRATCH": str(scratch), "ENDSTATE_WARM": "1",
           "ENDSTATE_WARM_SANDBOX": "1", "ENDSTATE_AUTHOR_CACHE": str(tmp_path / "cache")}
    proc = subprocess.run([sys.executable, "-c", PROGRAM, str(TASK)], capture_output=True,
                          text=True, env=env, timeout=600)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    outcomes = seen["outcomes"]
    assert "fail" not in outcomes.values() and "unassessed" not in outcomes.values(), outcomes
    ran = {name.split()[0] for name, outcome in outcomes.items() if outcome == "pass"}
    # the groups that grade with a judge all ran: directions, holdout (and its sentinel),
    # defects, the crash guard's runs, probes, mutants
    assert {"fixture", "solution", "holdout", "defect", "crash", "probe", "mutant"} <= ran
    # one judge and one child per grading (a mutant batch is one grading of many variants);
    # every one forked warm
    assert len(seen["judges"]) >= 7, seen
    assert seen["judges"] == [True] * len(seen["judges"]), seen
    assert seen["channels"] == [True] * len(seen["judges"]), seen
    # and nothing started fresh: not even the environment probe, which the failing gradings
    # (the fixture's, the defects') answer from the warm child's own start
    assert seen["commands"] == [True] * len(seen["commands"]), seen
    assert seen["probes"] == [], seen
