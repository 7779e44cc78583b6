"""What a walled command's start mounts (issue 48): every system folder it sees, read-only,
with no mount that shows nothing new.

Why: bubblewrap's start is nearly all of what a walled ``LocalSandbox.run`` costs, and each
read-only bind in it is two mounts and a read of the mount table. A folder inside another one
bound whole (the harness's Python under a version manager, a PATH folder that is a link into
``/usr``) was bound a second time. These tests hold both halves: the second bind is gone, and
what a command sees (and may not write) is the same.
"""

from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path

import pytest

from endstate_harness.sandbox import walls
from endstate_harness.sandbox.local import LocalSandbox
from endstate_harness.sandbox.walls import Layout
from tests.conftest import require_walls


def _tools(root: Path) -> tuple[Path, Path]:
    """A version manager's root with a tool folder inside another one's: PATH lists the
    inner first, as a shim's installation is found before the manager's own ``bin``."""
    outer = root / "manager"
    inner = outer / "versions" / "1.0"
    for folder in (outer / "bin", inner / "bin"):
        folder.mkdir(parents=True)
    prog = inner / "bin" / "endstate-hello"
    prog.write_text("#!/bin/sh\necho hello from inside\n")
    prog.chmod(0o755)
    return outer, inner


def _ro_binds(argv: list[str]) -> list[tuple[str, str]]:
    return [(argv[i + 1], argv[i + 2]) for i, a in enumerate(argv) if a == "--ro-bind"]


def test_a_folder_inside_a_bound_folder_is_not_bound_again(tmp_path: Path) -> None:
    outer, inner = _tools(tmp_path)
    path_env = f"{inner}/bin:{outer}/bin:/usr/bin:/bin"
    listed = walls.system_binds(path_env)
    # both are system folders (the inner one is what the harness keeps under a cover) ...
    assert ("ro", str(inner), str(inner)) in listed and ("ro", str(outer), str(outer)) in listed
    argv = walls.command_argv("bwrap", Layout((), "/"), ["true"], path_env)
    bound = _ro_binds(argv)
    # ... but only the outer one is mounted (at the start and, as it lies under /tmp, again
    # on top of /tmp's own tmpfs): it shows the inner one with it
    assert (str(outer), str(outer)) in bound, argv
    assert (str(inner), str(inner)) not in bound, argv


def test_a_path_folder_that_is_a_link_into_usr_is_not_bound_again() -> None:
    if not (os.path.islink("/bin") and os.path.realpath("/bin") == "/usr/bin"):
        pytest.skip("this system's /bin is no link into /usr (not a merged-/usr system)")
    argv = walls.command_argv("bwrap", Layout((), "/"), ["true"], "/bin:/usr/bin")
    assert ("/usr/bin", "/bin") not in _ro_binds(argv), argv
    assert ["--symlink", os.readlink("/bin"), "/bin"] == argv[argv.index("/bin") - 2:
                                                             argv.index("/bin") + 1]


def test_a_link_the_walls_do_not_show_keeps_its_bind(tmp_path: Path) -> None:
    """A PATH folder that is a link in a folder the walls do not show still gets its own
    bind: behind the walls nothing else would lead there."""
    link = tmp_path / "tools-bin"
    link.symlink_to("/usr/bin")
    assert ("ro", "/usr/bin", str(link)) in walls.system_binds(f"{link}:/usr/bin")


def test_a_walled_command_still_sees_the_inner_folder_read_only(tmp_path: Path) -> None:
    """The real walls, with the second bind gone: the inner folder's program runs, and
    neither folder can be written."""
    require_walls()
    found = walls.status()
    outer, inner = _tools(tmp_path)
    path_env = f"{inner}/bin:{outer}/bin:{os.environ.get('PATH', os.defpath)}"
    script = (f"endstate-hello; touch {inner}/x 2>/dev/null && echo inner-written; "
              f"touch {outer}/x 2>/dev/null && echo outer-written; echo done")
    argv = walls.command_argv(found.bwrap, Layout((), "/"), ["/bin/sh", "-c", script],
                              path_env)
    proc = subprocess.run(argv, capture_output=True, text=True, env={"PATH": path_env},
                          timeout=60, check=False)
    assert proc.stdout.split("\n") == ["hello from inside", "done", ""], proc
    assert not (inner / "x").exists() and not (outer / "x").exists()


def test_the_task_suite_stays_covered_in_a_tool_folder_shown_again(tmp_path: Path) -> None:
    """A task suite inside a folder the walls show again on top of ``/tmp`` (a checkout under
    ``/tmp`` whose ``bin`` is on PATH): the suite is covered, and showing the folder again
    must not show the suite (the holdout) with it, to a fresh command or to a warm run."""
    require_walls()
    checkout = tmp_path / "checkout"
    (checkout / "bin").mkdir(parents=True)
    task = checkout / "tasks" / "t1"
    (task / "holdout").mkdir(parents=True)
    secret = task / "holdout" / "secret.txt"
    secret.write_text("THE-HOLDOUT\n")
    (task / "fixture" / "pkg").mkdir(parents=True)
    (task / "fixture" / "pkg" / "__init__.py").write_text("")
    path_env = f"{checkout / 'bin'}:{os.environ.get('PATH', os.defpath)}"
    assert walls.covers_for(task / "fixture", path_env) == (str(checkout / "tasks"),)
    probe = f"print(open({str(secret)!r}).read())"
    with LocalSandbox(task / "fixture", walls=True, path_env=path_env,
                      scratch_root=tmp_path) as box:
        for command in (f"cat {secret}",  # fresh, behind bubblewrap
                        f"python3 -c {shlex.quote(probe)}",  # a warm run, if recognised
                        f"cat /dev/null; python3 -c {shlex.quote(probe)}"):  # fresh
            result = box.run(command)
            assert "THE-HOLDOUT" not in result.output, (command, result)
            assert not result.ok, (command, result)
