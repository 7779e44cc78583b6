"""Hostile task folders: escaping links and paths, import-time side effects, resource bombs.

A task folder is untrusted input (it comes from a pull request, a download, a model). Every
test builds the hostile thing for real and then checks the machine, not the program's word:

* targets outside the task are a regular file (must stay unread/unmodified: hashed), a
  folder (must stay unmodified), and a **named pipe**: anything that follows a link to it and
  reads blocks forever, so "never followed" shows up as a run that ends at all;
* a grader module that writes a marker file when imported: the marker must not appear after
  lint or an untrusted language server, and does appear when prove imports it (so the test
  can fail);
* a fork bomb inside Docker stops at the pids limit and the sandbox still answers afterwards.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from endstate_author.lint.run import lint_paths
from endstate_harness.sandbox.base import PathEscapeError
from endstate_harness.sandbox.local import LocalSandbox
from tests.reliability.conftest import CLI, private_env, tree_digest
from tests.reliability.lspclient import LspClient
from tests.rules.conftest import GOOD_MANIFEST, TaskBuilder

RUN_KNOWN = bool(os.environ.get("ENDSTATE_RUN_KNOWN_FAILURES"))


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """What hostile links point at: a secret file, a folder, and a named pipe."""
    out = tmp_path / "outside"
    (out / "dir").mkdir(parents=True)
    (out / "secret.txt").write_text("SECRET\n")
    (out / "dir" / "keep.py").write_text("KEEP = 1\n")
    os.mkfifo(out / "fifo")
    return out


@pytest.fixture
def linked_task(tmp_path: Path, outside: Path) -> Path:
    """The guide's sound task plus escaping links in fixture/, holdout/ and solution/."""
    root = TaskBuilder(tmp_path / "suite")()
    os.symlink(outside / "fifo", root / "fixture" / "data.txt")
    os.symlink("../../../outside/dir", root / "fixture" / "ext")
    os.symlink(outside / "dir", root / "solution" / "tests")
    os.symlink(outside / "secret.txt", root / "holdout" / "leak.txt")
    return root


def test_lint_reports_every_escaping_link_and_follows_none(
    linked_task: Path, outside: Path
) -> None:
    before = tree_digest(outside)
    started = time.monotonic()
    found = lint_paths([linked_task], isolated=True).diagnostics
    assert time.monotonic() - started < 10, "lint was slow: did it open the pipe?"
    flagged = sorted(d.message.split(" is a symlink")[0] for d in found if d.code == "ES410")
    assert flagged == ["fixture/data.txt", "fixture/ext", "holdout/leak.txt", "solution/tests"]
    assert not [d for d in found if d.code == "ES000"]
    assert tree_digest(outside) == before


def test_lint_refuses_grader_paths_outside_the_task(tmp_path: Path) -> None:
    manifest = copy.deepcopy(GOOD_MANIFEST)
    manifest["graders"].append(
        {
            "name": "endstate.evals.graders:files_unchanged",
            "args": {"paths": ["../../outside/secret.txt", "/etc/passwd"]},
        }
    )
    manifest["graders"].append(
        {
            "name": "endstate.evals.graders:file_contains",
            "args": {"path": "../outside/secret.txt", "text": "SECRET"},
        }
    )
    root = TaskBuilder(tmp_path / "suite")(manifest)
    found = lint_paths([root], isolated=True).diagnostics
    messages = [d.message for d in found if d.severity == "error" or d.code == "ES506"]
    for path in ("../../outside/secret.txt", "/etc/passwd", "../outside/secret.txt"):
        assert any(path in m for m in messages), f"{path} was not reported: {messages}"


def _prove_json(args: list[str], base: Path) -> tuple[int, dict[str, Any], str]:
    env = private_env(base, uuid.uuid4().hex)
    proc = subprocess.run(
        [*CLI, "prove", *args, "-o", "json", "--no-cache"],
        env=env,
        cwd=base,
        capture_output=True,
        text=True,
        timeout=120,  # a followed pipe would block forever: this is the "never followed" check
    )
    return proc.returncode, json.loads(proc.stdout or "{}"), proc.stderr


def test_prove_refuses_a_task_with_escaping_links(
    linked_task: Path, outside: Path, tmp_path: Path
) -> None:
    before, task_before = tree_digest(outside), tree_digest(linked_task)
    code, report, err = _prove_json(
        [str(linked_task), "--sandbox", "local", "--only", "directions"], tmp_path / "run"
    )
    # one cause, one message (issue 46): lint's ES410, once, and nothing else checked —
    # never a pass, and no sandbox ever copies the link
    assert code == 1, err
    [check] = report["tasks"][0]["checks"]
    assert check["outcome"] == "fail" and "(ES410 at " in check["detail"], check
    assert {d["code"] for d in report["diagnostics"]} == {"ES410"}, report["diagnostics"]
    assert tree_digest(outside) == before
    assert tree_digest(linked_task) == task_before
    assert not list((tmp_path / "run" / "tmp").iterdir())


def test_prove_grader_paths_outside_the_sandbox_are_refused(tmp_path: Path) -> None:
    out = tmp_path / "outside"
    out.mkdir()
    (out / "secret.txt").write_text("SECRET\n")
    manifest = copy.deepcopy(GOOD_MANIFEST)
    manifest["graders"].append(
        {
            "name": "endstate.evals.graders:file_contains",
            "args": {"path": "../../outside/secret.txt", "text": "SECRET"},
        }
    )
    root = TaskBuilder(tmp_path / "suite")(manifest)
    code, report, err = _prove_json(
        [str(root), "--sandbox", "local", "--only", "directions"], tmp_path / "run"
    )
    solution = next(c for c in report["tasks"][0]["checks"] if c["check"] == "solution passes")
    assert solution["outcome"] == "fail", solution  # the read was refused, so it cannot pass
    assert "PathEscapeError" in solution["detail"] and "leaves the sandbox" in solution["detail"]
    assert code == 1, err


@pytest.mark.parametrize("backend", ["local", "docker"])
def test_sandbox_refuses_escaping_paths_and_planted_links(
    backend: str, tmp_path: Path, outside: Path, request: pytest.FixtureRequest
) -> None:
    fixture = tmp_path / "fixture"
    fixture.mkdir()
    (fixture / "a.txt").write_text("a\n")
    if backend == "docker":
        from endstate_harness.sandbox.docker.container import DockerSandbox

        image = request.getfixturevalue("sandbox_image")
        box: Any = DockerSandbox(fixture, image=image, pull=False, scratch_root=tmp_path / "s")
    else:
        box = LocalSandbox(fixture, scratch_root=tmp_path / "s")
    before = tree_digest(outside)
    with box:
        # What an agent can plant: links out of the tree, made by a command in the sandbox.
        planted = box.run(
            f"ln -s {outside / 'secret.txt'} leak.txt && ln -s {outside / 'dir'} tests && "
            f"ln -s {outside / 'fifo'} pipe.txt && ln -s ../.. up"
        )
        assert planted.ok, planted.output
        for path in ["../outside/secret.txt", "/etc/passwd", str(outside / "secret.txt"),
                     "leak.txt", "tests/keep.py", "pipe.txt", "up/outside/secret.txt",
                     "a.txt\0x"]:  # fmt: skip
            with pytest.raises(PathEscapeError):
                box.read_text(path)
            with pytest.raises(PathEscapeError):
                box.write_text(path, "pwned\n")
        box.seal()
        assert "SECRET" not in json.dumps(box.end_state_files())
        # The holdout overlay replaces a planted link instead of writing through it.
        holdout = tmp_path / "holdout"
        (holdout / "tests").mkdir(parents=True)
        (holdout / "tests" / "keep.py").write_text("OVERWRITTEN = 1\n")
        box.stage(holdout)
    assert tree_digest(outside) == before
    assert not list((tmp_path / "s").iterdir())


# ----------------------------------------------------------------------------- task.json links


def test_task_json_that_is_a_link_to_a_pipe_never_hangs(tmp_path: Path, outside: Path) -> None:
    root = TaskBuilder(tmp_path / "suite")()
    (root / "task.json").unlink()
    os.symlink(outside / "fifo", root / "task.json")
    env = private_env(tmp_path / "run", uuid.uuid4().hex)
    try:
        proc = subprocess.run(
            [*CLI, "lint", str(root), "--isolated"],
            env=env,
            capture_output=True,
            text=True,
            timeout=8,  # a read of the pipe blocks forever
        )
    except subprocess.TimeoutExpired:
        raise AssertionError("lint hung on a task.json that links to a named pipe") from None
    assert proc.returncode != 0 and (proc.stdout + proc.stderr).strip(), (
        f"lint said nothing about a task.json it could not read (exit {proc.returncode})"
    )


# ----------------------------------------------------------------------------- import side effects

GRADER_MODULE = """
from pathlib import Path
Path({marker!r}).write_text("imported")


def never_imported(sandbox, expected: str = "x"):
    raise AssertionError("not reached by lint")
"""


def _side_effect_task(tmp_path: Path) -> tuple[Path, Path]:
    marker = tmp_path / "IMPORTED"
    suite = tmp_path / "suite"
    manifest = copy.deepcopy(GOOD_MANIFEST)
    manifest["graders"].append({"name": "evilgraders:never_imported", "args": {"expected": "y"}})
    root = TaskBuilder(suite)(manifest)
    (root / "evilgraders.py").write_text(GRADER_MODULE.format(marker=str(marker)))
    return root, marker


def test_lint_never_imports_a_suite_grader_module(tmp_path: Path) -> None:
    root, marker = _side_effect_task(tmp_path)
    found = lint_paths([root], isolated=True).diagnostics
    assert not [d for d in found if d.code in ("ES000", "ES202")], found  # it was resolved
    assert not marker.exists(), "lint imported the grader module"
    # The control: prove does import it (trusted by the person who runs prove), so the
    # marker is a working detector.
    _prove_json([str(root), "--sandbox", "local", "--only", "directions"], tmp_path / "run")
    assert marker.exists(), "the control failed: prove never imported the module"


def test_untrusted_language_server_never_imports_a_grader_module(tmp_path: Path) -> None:
    root, marker = _side_effect_task(tmp_path)
    uri = (root / "task.json").as_uri()
    env = private_env(tmp_path / "env", uuid.uuid4().hex)
    with LspClient(env=env, cwd=tmp_path) as client:
        # Untrusted (the default) with prove-on-save asked for: prove must still not run.
        client.initialize({"debounceMs": 0, "proveOnSave": True}, root=root.parent)
        client.open(uri, (root / "task.json").read_text())
        assert client.diagnostics(uri, 1, timeout=30.0) is not None
        client.notify("textDocument/didSave", {"textDocument": {"uri": uri}})
        gpos = (root / "task.json").read_text().index("never_imported")
        line = (root / "task.json").read_text()[:gpos].count("\n")
        for method in ("textDocument/hover", "textDocument/completion", "textDocument/definition"):
            client.request(
                method,
                {"textDocument": {"uri": uri}, "position": {"line": line, "character": 20}},
                timeout=10.0,
            )
        time.sleep(1.0)  # room for a (wrong) prove-on-save to start
        code = client.close()
    assert code == 0
    assert not marker.exists(), "the untrusted language server imported the grader module"


# ----------------------------------------------------------------------------- docker limits


@pytest.mark.docker
def test_docker_stops_a_fork_bomb(tmp_path: Path, sandbox_image: str) -> None:
    from endstate_harness.sandbox.docker.container import DockerSandbox

    fixture = tmp_path / "fixture"
    fixture.mkdir()
    (fixture / "a.txt").write_text("a\n")
    with DockerSandbox(fixture, image=sandbox_image, pull=False, pids_limit=128) as box:
        started = time.monotonic()
        bomb = box.run("b() { b | b & }; b; sleep 30", timeout_s=5)
        took = time.monotonic() - started
        assert took < 5 + box.watchdog_grace_s + 5, f"the bomb ran {took:.1f} s"
        after = box.run("echo alive", timeout_s=20)
        assert after.ok and "alive" in after.stdout, after
        pids = box.run("ls -d /proc/[0-9]* | wc -l").stdout.strip()
        assert int(pids) <= 10, f"{pids} processes still in the container after the bomb"
    assert bomb.timed_out or bomb.exit_code != 0


@pytest.mark.docker
def test_docker_bounds_a_disk_fill(tmp_path: Path, sandbox_image: str) -> None:
    """What Docker limits, each shown by a real write:

    * ``/tmp`` is a 64 MiB tmpfs: writing 96 MiB fails with ENOSPC (and the space comes back);
    * the root file system is read-only: nothing can be written outside ``/tmp`` and ``/work``;
    * ``/work`` is a bind mount of the host scratch folder, which Docker cannot size: a write
      that never ends there is stopped by the command's timeout (the documented bound).
    """
    from endstate_harness.sandbox.docker.container import DockerSandbox

    fixture = tmp_path / "fixture"
    fixture.mkdir()
    (fixture / "a.txt").write_text("a\n")
    with DockerSandbox(fixture, image=sandbox_image, pull=False) as box:
        fill = box.run("dd if=/dev/zero of=/tmp/fill bs=1M count=96 2>&1; echo rc=$?", timeout_s=60)
        size = box.run("stat -c %s /tmp/fill").stdout.strip()
        box.run("rm -f /tmp/fill")
        again = box.run("dd if=/dev/zero of=/tmp/small bs=1M count=8 2>&1; echo rc=$?")
        rootfs = box.run("for d in / /etc /var/tmp /usr/local; do touch $d/x 2>&1; done; echo done")
        started = time.monotonic()
        endless = box.run("cat /dev/zero > /work/endless", timeout_s=2)
        took = time.monotonic() - started
        home = box.run('echo "$HOME"; : > "$HOME/.rc" && echo writable')
    assert "No space left" in fill.stdout and "rc=0" not in fill.stdout, fill.stdout
    assert int(size) <= 64 * 1024 * 1024, f"/tmp held {size} bytes past its 64 MiB size"
    assert "rc=0" in again.stdout, f"the space did not come back: {again.stdout}"
    assert rootfs.stdout.count("Read-only file system") == 4 and "done" in rootfs.stdout, rootfs
    assert endless.timed_out, endless
    assert took < 2 + 10, f"the endless write ran {took:.1f} s past a 2 s limit"
    assert home.ok and "writable" in home.stdout, home  # HOME is in the writable /tmp
    assert not list((tmp_path).glob("**/endless")), "the scratch folder outlived the sandbox"
