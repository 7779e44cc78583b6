"""The test suite shares the machine: what another run, an author's prove or a language server
makes meanwhile is never counted as this session's (issue 46 item 8).

Two runs of ``make test`` failed so: a Docker test counted another run's container as its own
leak, and a Ray test counted another process's temporary folders (``endstate-lsp-*``,
``endstate-zygote-*``) as left behind by its killed node. Here the other process is real and
acts while the checks look: it runs with the machine's own temp folder, as any process not
started by this session does. ``scripts/side-by-side.sh`` runs whole sessions side by side.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
HARNESS = REPO / "harness"


def _outside_env(tmp: Path) -> dict[str, str]:
    """The environment of a process this session did not start: the machine's temp folder
    (here one made for the purpose, outside the session's), no session variables."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("TMPDIR", "ENDSTATE_SCRATCH", "ENDSTATE_TEST_SESSION_TMP")}
    env["TMPDIR"] = str(tmp)
    return env


def test_another_process_s_folders_are_not_a_killed_node_s_leftovers() -> None:
    """The Ray test's look for what a killed node left (``_node_scratch``) does not see the
    folders of a language server or a zygote of another process, in the machine's temp
    folders."""
    pytest.importorskip("ray", reason="Ray is not installed (pip install 'endstate-author[ray]')")
    from tests.executors.test_ray_cluster import _node_scratch

    before = _node_scratch()
    made = []
    try:
        for parent, prefix in (("/tmp", "endstate-lsp-run-"), ("/dev/shm", "endstate-zygote-")):
            if not os.access(parent, os.W_OK):
                continue
            out = subprocess.run(
                [sys.executable, "-c",
                 f"import tempfile; print(tempfile.mkdtemp(prefix={prefix!r}, dir={parent!r}))"],
                capture_output=True, text=True, check=True,
                env=_outside_env(Path(parent)),
            )  # fmt: skip
            made.append(out.stdout.strip())
        assert made, "no machine-wide temp folder is writable here"
        assert _node_scratch() - before == set()
    finally:
        for folder in made:
            shutil.rmtree(folder, ignore_errors=True)


INNER_TEST = '''
import subprocess, sys

def test_another_run_leaves_a_container_meanwhile(docker_image):
    """Another run's sandbox container, left by its killed owner while this test runs."""
    out = subprocess.run([sys.executable, "-c", {script!r}], capture_output=True, text=True,
                         env={env!r})
    assert out.returncode == -9, out.stderr
    with open({note!r}, "w") as handle:
        handle.write(out.stdout)
'''


@pytest.mark.docker
def test_another_run_s_container_is_not_this_session_s_leak(
    docker_image: str, tmp_path: Path
) -> None:
    """A session (a real pytest run with this suite's fixtures) during which another run on
    the same daemon leaves a sandbox container passes: the leak check of ``docker_image``
    counts only this session's containers."""
    outside = Path(
        subprocess.run(
            [sys.executable, "-c", "import tempfile; print(tempfile.mkdtemp(prefix='es-other-'))"],
            capture_output=True, text=True, check=True, env=_outside_env(Path("/tmp")),
        ).stdout.strip()
    )  # fmt: skip
    fixture = outside / "fixture"
    fixture.mkdir()
    (fixture / "a.txt").write_text("a\n")
    foreign = textwrap.dedent(
        f"""
        import os, sys
        from pathlib import Path
        sys.path.insert(0, {str(HARNESS)!r})
        from endstate_harness.sandbox.docker.container import DockerSandbox
        sb = DockerSandbox(Path({str(fixture)!r}), image={docker_image!r}, pull=False)
        sb.setup(); sb.start()
        print(sb.container_id, sb.scratch, flush=True)
        os.kill(os.getpid(), 9)
        """
    )
    note = tmp_path / "foreign.txt"
    inner = tmp_path / "inner" / "test_inner.py"
    inner.parent.mkdir()
    inner.write_text(
        INNER_TEST.format(script=foreign, env=_outside_env(outside), note=str(note))
    )
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p",
             "tests.conftest", "-c", str(REPO / "pyproject.toml"), "--rootdir", str(REPO),
             str(inner)],
            capture_output=True, text=True, cwd=REPO, timeout=240,
        )  # fmt: skip
        assert note.is_file(), proc.stdout[-3000:]
        assert proc.returncode == 0, proc.stdout[-3000:]
    finally:
        if note.is_file():
            cid = note.read_text().split()[0]
            subprocess.run(["docker", "rm", "-f", cid], capture_output=True)
        shutil.rmtree(outside, ignore_errors=True)
