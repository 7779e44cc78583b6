"""The sandbox image as part of the tool: ``sandbox build``/``status``, and one resolution for
prove and eval, with no ``--image`` and no ``$ENDSTATE_SANDBOX_IMAGE``.

The Docker tests run against a real daemon (skipped, with the reason printed, when none
answers). ``make test`` builds the toolkit's own image once (scripts/ensure-docker.sh runs
``endstate-author sandbox build``); when it is absent here, the test image is tagged as it for
the duration of this module, so no test runs a full debootstrap.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import docker
import docker.errors
import pytest

from endstate_author import __version__
from endstate_harness.sandbox.docker.daemon import IMAGE_ENV, LOCAL_IMAGE, toolkit_version
from endstate_harness.sandbox.docker.image import own_image

ROOT = Path(__file__).resolve().parent.parent
TASK = "tasks/fix-help-text-wrap"
MISSING = "is not present and cannot be pulled here"


def run(*args: str, env: dict[str, str] | None = None, cwd: Path = ROOT) -> tuple[int, str, str]:
    """``endstate-author ARGS`` in a child process, without ``$ENDSTATE_SANDBOX_IMAGE``."""
    base = {k: v for k, v in os.environ.items() if k != IMAGE_ENV}
    proc = subprocess.run(
        [sys.executable, "-m", "endstate_author", *args],
        capture_output=True, text=True, timeout=300, cwd=cwd, env={**base, **(env or {})},
    )
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, proc.stdout, proc.stderr


def flat(*texts: str) -> str:
    """Output with every run of whitespace as one space (rich wraps long lines)."""
    return " ".join(" ".join(texts).split())


def test_the_harness_and_the_cli_agree_on_the_own_image() -> None:
    assert toolkit_version() == __version__
    assert LOCAL_IMAGE == own_image(__version__) == f"endstate-sandbox:{__version__}"


@contextmanager
def own_image_present(docker_image: str) -> Iterator[str]:
    """The toolkit's own image, present: as built by ``sandbox build``, or else the test
    image tagged as it (and the tag removed again afterwards)."""
    tag = own_image(__version__)
    client = docker.from_env()
    created = False
    try:
        try:
            client.images.get(tag)
        except docker.errors.ImageNotFound:
            repository, _, version = tag.rpartition(":")
            client.images.get(docker_image).tag(repository, version)
            created = True
        yield tag
    finally:
        if created:
            client.images.remove(tag)
        client.close()


@pytest.fixture(scope="module")
def own_tag(docker_image: str) -> Iterator[str]:
    with own_image_present(docker_image) as tag:
        yield tag


def test_status_prove_and_eval_use_the_own_image_with_no_flag(own_tag: str, tmp_path: Path) -> None:
    cache = {"ENDSTATE_AUTHOR_CACHE": str(tmp_path / "cache")}
    rc, out, err = run("sandbox", "status")
    assert rc == 0, out + err
    assert f"image:   {own_tag}" in out and "the toolkit's own image" in out, out
    assert "present: yes" in out and "daemon:  answers" in out, out

    rc, out, err = run("prove", TASK, "--only", "directions", env=cache)
    assert rc == 0, out + err
    # the directions: fixture fails, solution passes, the same under another hash seed
    assert "3 checks passed, 0 failed, 0 unassessed" in out, out
    assert "local sandbox" not in err, err  # auto chose Docker, with the own image

    rc, out, err = run("eval", "tasks", "--task", "fix-help-text-wrap", "--provider", "oracle",
                       "--out", str(tmp_path / "eval"))
    assert rc == 0, out + err
    assert "fix-help-text-wrap │ 1 │ bug-fix │ pass │" in flat(out), out
    report_md = (tmp_path / "eval" / "report.md").read_text()
    assert "| `fix-help-text-wrap` | 1 | bug-fix | pass |" in report_md
    # the image it ran in, in every report of the run
    assert f"sandbox: docker ({own_tag})" in report_md
    assert f"sandbox docker ({own_tag})" in flat(out)
    assert f"sandbox docker ({own_tag})" in (tmp_path / "eval" / "report.html").read_text()
    results = (tmp_path / "eval" / "results.json").read_text()
    assert f'"sandbox_image": "{own_tag}"' in results


def test_a_missing_image_is_one_error_before_any_task(docker_image: str, tmp_path: Path) -> None:
    cache = {"ENDSTATE_AUTHOR_CACHE": str(tmp_path / "cache")}
    for args in (
        ("prove", TASK, "--image", "nope:1"),
        ("prove", TASK, "--image", "nope:1", "--sandbox", "docker", "-o", "json"),
        ("eval", "tasks", "--provider", "oracle", "--image", "nope:1"),
        ("sandbox", "status", "--image", "nope:1"),
    ):
        rc, out, err = run(*args, env=cache)
        text = flat(out, err)
        assert rc == 2, (args, out, err)
        assert text.count(MISSING) == 1, (args, text)
        assert "'nope:1'" in text and "sudo endstate-author sandbox build" in text, text
        assert "ES908" not in text and "checking" not in text, text


def test_build_of_an_existing_image_says_so(docker_image: str) -> None:
    rc, out, err = run("sandbox", "build", "--tag", docker_image)
    assert rc == 0, out + err
    assert f"{docker_image} already exists" in out and "--force rebuilds it" in out, out


def test_build_without_a_daemon_is_one_paragraph() -> None:
    env = {"DOCKER_HOST": "unix:///nonexistent/docker.sock"}
    rc, out, err = run("sandbox", "build", "--tag", "endstate-sandbox:never", env=env)
    assert rc == 2 and flat(err).count("cannot reach the Docker daemon") == 1, out + err
    rc, out, err = run("sandbox", "status", env=env)
    assert rc == 2 and "daemon:  does not answer" in out, out + err


def test_status_tells_daemon_down_from_image_missing(docker_image: str) -> None:
    """Daemon down: the daemon is what is wrong, and whether an image is built is unknown (it
    used to say "no toolkit image built" while the image was there). Image missing: the
    daemon answers and the image is named as absent."""
    down = {"DOCKER_HOST": "unix:///nonexistent/docker.sock"}
    rc, out, err = run("sandbox", "status", env=down)
    assert rc == 2, out + err
    assert "no toolkit image built" not in out, out
    assert f"image:   {own_image(__version__)}" in out, out
    assert "present: unknown: the daemon does not answer" in out, out
    assert "the daemon is down, not the image" in out and MISSING not in out, out
    rc, out, err = run("sandbox", "status", "--image", "nope:1")
    assert rc == 2, out + err
    assert "daemon:  answers" in out and "present: no" in out and MISSING in flat(out), out
    assert "daemon is down" not in out, out


def test_build_without_debootstrap_names_the_package(docker_image: str, tmp_path: Path) -> None:
    """The daemon answers, the tag is new, but debootstrap is not on PATH: one paragraph saying
    how to install it (as root; a non-root run stops first, saying root is needed)."""
    empty = tmp_path / "bin"
    empty.mkdir()
    rc, out, err = run("sandbox", "build", "--tag", "endstate-sandbox:never-built",
                       env={"PATH": str(empty)})
    assert rc == 2, out + err
    expected = "sudo apt-get install debootstrap" if os.geteuid() == 0 else "needs root"
    assert flat(err).count(expected) == 1, err


def test_build_without_apt_configuration_says_so(
    docker_image: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if os.geteuid() != 0 or shutil.which("debootstrap") is None:
        pytest.skip("the apt check comes after the root and debootstrap checks")
    from typer.testing import CliRunner

    from endstate_author.cli import cmd_sandbox
    from endstate_harness.sandbox.docker import image

    monkeypatch.setattr(image, "apt_mirror", lambda: None)
    result = CliRunner().invoke(
        cmd_sandbox.app, ["build", "--tag", "endstate-sandbox:never-built"]
    )
    assert result.exit_code == 2, result.output
    assert "no Debian archive found in this machine's apt configuration" in flat(result.output)


def test_status_says_whether_the_local_sandbox_is_walled() -> None:
    """``sandbox status`` says whether bubblewrap can wall the local sandbox in, and why not
    (here: a bubblewrap that is not a program, and walls turned off)."""
    from endstate_harness.sandbox.walls import status

    found = status()
    _rc, out, _err = run("sandbox", "status")
    expected = "walls:   yes (the local sandbox: walled by bubblewrap" if found.available \
        else f"walls:   no (the local sandbox: no walls: {found.reason}"
    assert expected in out, out
    _rc, out, _err = run("sandbox", "status", env={"ENDSTATE_BWRAP": "/nonexistent/bwrap"})
    assert "walls:   no (the local sandbox: no walls: /nonexistent/bwrap is not a program)" \
        in out, out
    _rc, out, _err = run("sandbox", "status", env={"ENDSTATE_WALLS": "0"})
    assert "no walls: turned off (ENDSTATE_WALLS=0)" in out, out
