"""A Ctrl-C at any step of a start leaves nothing behind: zygotes, the walls probe, a channel.

Timers (``test_zygote_interrupt``) land where a start spends its time: waiting for the new
process. The steps between, where an interrupt is most dangerous, take microseconds, and a
timer almost never meets them. An interrupt stress run of ``prove`` did meet them: the walls
probe's bubblewrap was left alive, its parent gone, when the SIGINT came inside ``Popen``
after the fork (or reached the probe too, in the harness's process group, while it built its
sandbox). A zygote that had just said it was ready could be lost in the same way, when
the signal came after the constructor returned but before the table held the zygote.

So each run here counts the start's steps first: every return of a Python or C function on
the main thread, seen through ``sys.setprofile``. Then it starts again, in the same fresh
interpreter, with a profiler that sends SIGINT at step ``k`` to the run's process group, as
a terminal's Ctrl-C does (each run has a session of its own). CPython then raises the
KeyboardInterrupt at the next point where it checks for signals, which is usually just after
that return. The runs choose ``k`` across the whole start, and also take each of its last
steps, and the return of the ``Popen`` internal that forks. Afterwards, once the caller has
closed what it got and the exit sweep has run, nothing may be left: no process started by the
run or working in its scratch folder, no zygote's folder, no sandbox's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.conftest import require_walls

PROGRAM = textwrap.dedent("""
    import json, os, signal, subprocess, sys
    from pathlib import Path

    kind, where, scratch = sys.argv[1], sys.argv[2], Path(sys.argv[3])

    def children():
        # live processes started by this one, or working in the scratch folder (a warm run
        # is the zygote's child, and works in its sandbox's live tree)
        me, found = str(os.getpid()), []
        for entry in Path("/proc").iterdir():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                cwd = os.readlink(entry / "cwd")
            except (OSError, IndexError):
                continue
            mine = fields[1] == me or cwd.startswith(str(scratch) + "/")
            if entry.name.isdigit() and mine and fields[0] != "Z" and entry.name != me:
                found.append((entry / "cmdline").read_bytes().replace(b"\\0", b" ")[:120]
                             .decode(errors="replace"))
        return found

    from endstate_harness.process import zygote as judges
    from endstate_harness.sandbox import walls
    from endstate_harness.sandbox import warm as sandboxes

    if kind == "judge":
        from endstate_harness.graders.judge.prestart import prestart_judge as start
    elif kind == "sandbox":
        from endstate_harness.graders.judge.launch import child_command

        def start():
            sandboxes.prestart_channel(child_command("python3"), scratch_root=scratch)
    elif kind == "channel":
        from endstate_harness.sandbox.local import LocalSandbox

        (scratch / "fixture").mkdir()
        (scratch / "fixture" / "kept.txt").write_text("kept\\n")
        (scratch / "boxes").mkdir()
        box = LocalSandbox(scratch / "fixture", scratch_root=scratch / "boxes")
        box.__enter__()
        box.seal()
        opened = []

        def start():
            opened.append(box.open_channel(["python3", "-c", "import sys; sys.stdin.read()"],
                                           timeout_s=60))
    else:
        def start():  # the probe itself, not its cached answer
            walls._probe.__wrapped__(walls._program(), os.environ["PATH"])

    def close():
        if kind == "channel":
            while opened:  # what the caller holds, the caller closes
                opened.pop().close()
        judges._REGISTRY.close()
        sandboxes._REGISTRY.close()

    start()  # what a start probes once per process is known before the counted ones
    close()
    steps = [0]

    def count(frame, event, arg):
        if event in ("return", "c_return"):
            steps[0] += 1

    sys.setprofile(count)
    start()
    sys.setprofile(None)
    close()
    total = steps[0]
    at = None if where == "fork" else int(where) % total
    steps[0] = 0
    fired = [False]

    def interrupt(frame, event, arg):
        if fired[0] or event not in ("return", "c_return"):
            return
        steps[0] += 1
        hit = (frame.f_code.co_name == "_execute_child" and event == "return"
               if at is None else steps[0] == at + 1)
        if hit:
            fired[0] = True
            os.killpg(0, signal.SIGINT)  # as a terminal's Ctrl-C: this run's whole group

    interrupted = False
    sys.setprofile(interrupt)
    try:
        start()
    except KeyboardInterrupt:
        interrupted = True
    finally:
        sys.setprofile(None)
    held = len(judges._zygotes) + len(sandboxes._zygotes)
    close()  # what the caller holds, and what the tables hold (the exit sweep closes those)
    from endstate_harness.process.cleanup import OPEN_SANDBOXES

    OPEN_SANDBOXES.close_all()  # the exit sweep: open sandboxes, and what they hold
    folders = [*scratch.glob("endstate-zygote-*"), *scratch.glob("boxes/*")]
    print(json.dumps({"total": total, "fired": fired[0], "interrupted": interrupted,
                      "held": held, "children": children(),
                      "folders": sorted(p.name for p in folders)}))
    sys.stdout.flush()
    os._exit(0)
""")

SPREAD = 9
"""Steps chosen evenly across the whole start (its last steps are all taken besides)."""
LAST = 14
"""How many of a start's last steps are each interrupted: from the zygote's "ready" on."""


def _run(kind: str, where: str, scratch: Path) -> dict[str, object]:
    scratch.mkdir()
    env = {**os.environ, "ENDSTATE_WARM": "1", "ENDSTATE_WARM_SANDBOX": "1",
           "TMPDIR": str(scratch)}  # fmt: skip
    proc = subprocess.run([sys.executable, "-c", PROGRAM, kind, where, str(scratch)],
                          capture_output=True, text=True, env=env, timeout=120,
                          start_new_session=True)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    report: dict[str, object] = json.loads(proc.stdout.strip().splitlines()[-1])
    return report


@pytest.mark.parametrize("kind", ["judge", "sandbox", "probe", "channel"])
def test_a_ctrl_c_at_any_step_of_a_start_leaves_nothing(kind: str, tmp_path: Path) -> None:
    if kind != "judge":
        require_walls()
    first = _run(kind, "0", tmp_path / "first")
    total = int(str(first["total"]))
    assert total > LAST, first
    wheres = sorted({str(total * i // SPREAD) for i in range(SPREAD)}
                    | {str(total - 1 - i) for i in range(LAST)})
    if kind == "probe":
        wheres.append("fork")  # the return of Popen's fork: the moment the stress run met
    rest = [w for w in wheres if w != "0"]
    with ThreadPoolExecutor(max_workers=4) as pool:  # each run mostly waits for a start
        reports = dict(zip(rest, pool.map(lambda w: _run(kind, w, tmp_path / f"at-{w}"), rest),
                           strict=True))
    reports["0"] = first
    interrupted = 0
    for where, report in sorted(reports.items()):
        # (a start's count varies a little, as its waits poll: a step past the end never fires)
        assert report["children"] == [], (kind, where, report)
        assert report["folders"] == [], (kind, where, report)
        interrupted += bool(report["interrupted"])
    # a signal at the very last steps can come after the start is done, or never: most must
    # interrupt it
    assert interrupted >= len(wheres) // 2, interrupted
