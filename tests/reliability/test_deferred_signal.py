"""A SIGTERM or SIGHUP that comes while the command line's imports run with signals deferred.

``endstate-author``'s entry point imports with SIGINT, SIGTERM and SIGHUP held back
(``defer_signals``), and ``prove``'s early start begins inside that section: the walls probe
and the warm interpreters behind bubblewrap. A signal held back there is delivered, once the
section ends, to the handler that was in place before it. That was SIGTERM's default action:
the process was killed outright, no exit handler ran, and what the early start had begun was
left to its own devices (an interrupt stress run found a bubblewrap alive after one run in 50).

Here the signal comes at exactly that moment: once the early start has done its work, from
inside the deferred section. The run must unwind (exit 128 + the signal, not killed by it) and
leave nothing: no process of its own, nothing in its private temp dir.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest

from tests.conftest import require_walls
from tests.reliability.conftest import marked_processes, private_env

ROOT = Path(__file__).resolve().parents[2]
TASK = ROOT / "tasks" / "fix-help-text-wrap"

PROGRAM = textwrap.dedent("""
    import os, sys
    import endstate_author.cli.prove_early as early

    signum = int(sys.argv[1])
    started = early.start

    def start(args):
        thread = started(args)
        if thread is not None:
            thread.join()  # the walls probe has run and the warm interpreters are up
        os.kill(os.getpid(), signum)  # held back: the imports' section is still open
        return thread

    early.start = start
    sys.argv = ["endstate-author", "prove", sys.argv[2], "--sandbox", "local", "--no-cache"]
    from endstate_author.cli import run

    run()
""")


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_a_signal_held_back_during_the_imports_unwinds_and_leaves_nothing(
        signum: int, tmp_path: Path) -> None:
    require_walls()
    marker = uuid.uuid4().hex
    env = private_env(tmp_path, marker)
    done = subprocess.run([sys.executable, "-c", PROGRAM, str(int(signum)), str(TASK)],
                          env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 128 + signum, (done.returncode, done.stderr[-2000:])
    assert "Traceback" not in done.stderr, done.stderr
    assert not marked_processes(marker, tmp_path / "tmp")
    assert not list((tmp_path / "tmp").iterdir())
