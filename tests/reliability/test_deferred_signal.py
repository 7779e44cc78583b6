"""Signals at the two awkward moments of a command's life: held back, and inside an import.

**Held back.** A SIGTERM or SIGHUP that comes while the command line's imports run with
signals deferred.

``endstate-author``'s entry point imports with SIGINT, SIGTERM and SIGHUP held back
(``defer_signals``), and ``prove``'s early start begins inside that section: the walls probe
and the warm interpreters behind bubblewrap. A signal held back there is delivered, once the
section ends, to the handler that was in place before it. That was SIGTERM's default action:
the process was killed outright, no exit handler ran, and what the early start had begun was
left to its own devices (an interrupt stress run found a bubblewrap alive after one run in 50).

Here the signal comes at exactly that moment: once the early start has done its work, from
inside the deferred section. The run must unwind (exit 128 + the signal, not killed by it) and
leave nothing: no process of its own, nothing in its private temp dir.

**Inside the import machinery.** A handler that raises while the main thread runs
importlib's own code can leave the interpreter's import lock held: the callback that drops a
module's lock takes the global lock, and an exception before its ``try`` skips the release.
CPython prints "Exception ignored", the signal is lost, and every later import in any thread
waits for ever (an interrupt stress run of ``prove`` in Docker hung so, once in 200 runs: a
grading thread stuck in an import, the main thread waiting for it). Here the signal lands
exactly there, every time: a thread holds the import lock while the callback waits for it,
sends the signal (pending: the main thread runs no bytecode), and lets go, so the handler runs
at the callback's next bytecode. The command line's handlers must still stop the program, and
imports must still work after.
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


IMPORT_LOCK = textwrap.dedent("""
    import _imp, os, signal, sys, threading, time
    from endstate_author import interrupts

    interrupts.install()
    signum = int(sys.argv[1])
    go, held = threading.Event(), threading.Event()

    def holder():
        go.wait()
        _imp.acquire_lock()
        held.set()
        time.sleep(0.1)  # the main thread waits in the callback's acquire by now
        os.kill(os.getpid(), signum)  # pending: the main thread runs no bytecode
        time.sleep(0.1)
        _imp.release_lock()  # the callback goes on, and its next bytecode runs the handler

    threading.Thread(target=holder, daemon=True).start()

    def profile(frame, event, arg):
        code = frame.f_code
        if (event == "c_call" and not go.is_set() and code.co_name == "cb"
                and code.co_filename == "<frozen importlib._bootstrap>"):
            sys.setprofile(None)  # no Python code of ours runs between the two
            go.set()
            held.wait()

    stopped = "no"
    try:
        sys.setprofile(profile)
        import email.mime.text  # not imported yet: its module locks die after
        sys.setprofile(None)
        time.sleep(1.0)
    except KeyboardInterrupt:
        stopped = "KeyboardInterrupt"
    except SystemExit as exc:
        stopped = f"SystemExit {exc.code}"
    sys.setprofile(None)
    later = threading.Thread(target=lambda: __import__("xml.dom.minidom"), daemon=True)
    later.start()
    later.join(10)
    print(go.is_set(), stopped, "hung" if later.is_alive() else "imported", flush=True)
    os._exit(0)
""")


@pytest.mark.parametrize(("signum", "stops"), [(signal.SIGINT, "KeyboardInterrupt"),
                                               (signal.SIGTERM, "SystemExit 143")],
                         ids=["SIGINT", "SIGTERM"])
def test_a_signal_inside_the_import_machinery_stops_the_program_and_imports_still_work(
        signum: int, stops: str) -> None:
    done = subprocess.run([sys.executable, "-c", IMPORT_LOCK, str(int(signum))],
                          capture_output=True, text=True, timeout=60)
    assert done.stdout.split() == ["True", *stops.split(), "imported"], done.stdout + done.stderr
    assert "Exception ignored" not in done.stderr, done.stderr
