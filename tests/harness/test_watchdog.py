"""The watcher that cleans up after a SIGKILLed owner (:mod:`endstate_harness.process.watchdog`).

Each test runs the owner as a real child process, kills it with SIGKILL (no Python code of
it runs after that) and waits for the watcher to do its work.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest

HARNESS = Path(__file__).resolve().parents[2] / "harness"


def _owner(body: str) -> subprocess.Popen[str]:
    """A child that runs ``body`` after guarding itself, prints a line, then sleeps."""
    script = textwrap.dedent(
        """
        import sys, time
        from pathlib import Path
        sys.path.insert(0, {harness!r})
        from endstate_harness.process import watchdog
        """
    ).format(harness=str(HARNESS))
    script += textwrap.dedent(body) + "\nprint('ready', flush=True)\ntime.sleep(120)\n"
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "ready"
    return proc


def _until(condition: Callable[[], bool], seconds: float = 20.0) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _kill(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.wait()


def test_a_protected_folder_is_removed_when_its_owner_is_killed(tmp_path: Path) -> None:
    doomed = tmp_path / "doomed"
    (doomed / "deep").mkdir(parents=True)
    (doomed / "deep" / "file").write_text("x")
    proc = _owner(f"watchdog.guard()\nwatchdog.protect(Path({str(doomed)!r}))")
    time.sleep(0.3)
    assert doomed.exists(), "removed while its owner was alive"
    _kill(proc)
    assert _until(lambda: not doomed.exists()), "the watcher did not remove the folder"


def test_a_released_folder_is_left_alone(tmp_path: Path) -> None:
    kept = tmp_path / "kept"
    kept.mkdir()
    proc = _owner(
        f"watchdog.guard()\nwatchdog.protect(Path({str(kept)!r}))\n"
        f"watchdog.release(Path({str(kept)!r}))"
    )
    _kill(proc)
    time.sleep(1.0)
    assert kept.is_dir()


def test_a_process_that_never_guards_starts_no_watcher() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(f"""
            import sys
            sys.path.insert(0, {str(HARNESS)!r})
            from endstate_harness.process import watchdog
            print(watchdog.watched())
        """)],
        capture_output=True, text=True, check=True,
    )
    assert proc.stdout.strip() == "False"


@pytest.mark.docker
def test_the_container_of_a_killed_owner_is_removed(docker_image: str, tmp_path: Path) -> None:
    from tests.conftest import make_fixture_tree

    fixture = make_fixture_tree(tmp_path / "fixture")
    proc = _owner(
        f"""
        from endstate_harness.sandbox.docker.container import DockerSandbox
        watchdog.guard(docker=True)
        box = DockerSandbox(Path({str(fixture)!r}), image={docker_image!r}, pull=False)
        box.setup()
        box.start()
        """
    )
    import docker

    client = docker.from_env()
    try:
        owned = client.containers.list(
            all=True, filters={"label": f"endstate-author.pid={proc.pid}"}
        )
        assert owned, "the owner started no container"
        _kill(proc)

        def gone() -> bool:
            # sparse: no inspect of each listed container, which raises NotFound for one the
            # watcher removes between the list and the inspect (the race this test looks for)
            return not client.containers.list(
                all=True, sparse=True, filters={"label": f"endstate-author.pid={proc.pid}"}
            )

        assert _until(gone, 30.0), "the watcher did not remove the container"
    finally:
        client.close()
