"""A Ctrl-C while a warm interpreter starts leaves no process and no folder behind.

A zygote (the judge's, or a sandbox's behind bubblewrap) is put in its table only once it says
it is ready, 0.05-0.3 s after its start; a KeyboardInterrupt in between used to leave it
running, known to nobody (an interrupt stress run of ``eval`` found a bubblewrap left alive
after a Ctrl-C 0.53 s in). Each run here, in a fresh interpreter, starts a zygote with a timer
that sends it SIGINT after a few milliseconds, at a different moment each time, and
looks at what is left before any exit handler could sweep it (the process ends with
``os._exit``): no live child process, no zygote folder. A first start, closed again, comes
before the timed one, so that the probes a start makes once per process (bubblewrap's, a
short-lived process that ends by itself) are done and the timer can only meet the zygote's
own start.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.conftest import require_walls

PROGRAM = textwrap.dedent("""
    import json, os, signal, sys
    from pathlib import Path

    kind, delay, scratch = sys.argv[1], float(sys.argv[2]), Path(sys.argv[3])

    def interrupt(signum, frame):  # a real Ctrl-C: SIGINT, which a critical section defers
        os.kill(os.getpid(), signal.SIGINT)

    def children():
        me, found = str(os.getpid()), []
        for entry in Path("/proc").iterdir():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if entry.name.isdigit() and fields[1] == me and fields[0] != "Z":
                found.append((entry / "cmdline").read_bytes().replace(b"\\0", b" ")[:120]
                             .decode(errors="replace"))
        return found

    if kind == "judge":
        from endstate_harness.graders.judge.prestart import prestart_judge as start
    else:
        from endstate_harness.graders.judge.launch import child_command
        from endstate_harness.sandbox.warm import prestart_channel

        def start():
            prestart_channel(child_command("python3"), scratch_root=scratch)

    from endstate_harness.process import zygote as judges
    from endstate_harness.sandbox import warm as sandboxes

    # A first start, closed again: what a start probes once per process (bubblewrap, the
    # interpreter) is known before the timed one, which then starts nothing but its zygote.
    start()
    judges._REGISTRY.close()
    sandboxes._REGISTRY.close()
    signal.signal(signal.SIGALRM, interrupt)
    signal.setitimer(signal.ITIMER_REAL, delay)
    interrupted = False
    try:
        start()
    except KeyboardInterrupt:
        interrupted = True
    signal.setitimer(signal.ITIMER_REAL, 0)
    started = len(judges._zygotes) + len(sandboxes._zygotes)
    if not interrupted:  # it was up first: what a finished start leaves is the table's to close
        judges._REGISTRY.close()
        sandboxes._REGISTRY.close()
    print(json.dumps({"interrupted": interrupted, "started": started, "children": children(),
                      "folders": sorted(p.name for p in scratch.glob("endstate-zygote-*"))}))
    sys.stdout.flush()
    os._exit(0)
""")

DELAYS = (0.0005, 0.002, 0.005, 0.01, 0.02, 0.04, 0.08, 0.15)


@pytest.mark.parametrize("kind", ["judge", "sandbox"])
def test_a_ctrl_c_while_a_zygote_starts_leaves_nothing(kind: str, tmp_path: Path) -> None:
    if kind == "sandbox":
        require_walls()
    interrupted = 0
    for i, delay in enumerate(DELAYS):
        scratch = tmp_path / f"scratch-{i}"
        scratch.mkdir()
        env = {**os.environ, "ENDSTATE_WARM": "1", "ENDSTATE_WARM_SANDBOX": "1",
               "TMPDIR": str(scratch)}
        proc = subprocess.run([sys.executable, "-c", PROGRAM, kind, str(delay), str(scratch)],
                              capture_output=True, text=True, env=env, timeout=120)  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        report = json.loads(proc.stdout.strip().splitlines()[-1])
        assert report["children"] == [], (delay, report)
        assert report["folders"] == [], (delay, report)
        interrupted += report["interrupted"]
        if not report["interrupted"]:
            assert report["started"] == 1, report  # the start under test did start
    # most timers fire while the interpreter is still starting: the case under test ran
    assert interrupted >= len(DELAYS) // 2, interrupted
