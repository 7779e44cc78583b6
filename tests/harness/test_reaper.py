"""The background deletion of closed sandboxes' scratch folders
(endstate_harness.process.reaper)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

from endstate_harness.process import reaper
from endstate_harness.sandbox.local import LocalSandbox


def _tree(root: Path) -> Path:
    folder = root / "endstate-sb-x"
    (folder / "live" / "pkg").mkdir(parents=True)
    (folder / "live" / "pkg" / "a.py").write_text("x = 1\n")
    (folder / "live" / "link").symlink_to("/etc")
    locked = folder / "home" / "locked"
    locked.mkdir(parents=True)
    (locked / "f").write_text("f")
    locked.chmod(stat.S_IRUSR | stat.S_IXUSR)  # an agent left a folder without the write bit
    return folder


def test_the_folder_is_gone_at_once_and_deleted_after_drain(tmp_path: Path) -> None:
    folder = _tree(tmp_path)
    reaper.remove_later(folder)
    assert not folder.exists()
    reaper.drain()
    assert os.listdir(tmp_path) == []
    assert Path("/etc").is_dir()  # the link was removed, not followed


def test_a_background_sandbox_leaves_nothing_once_drained(tmp_path: Path) -> None:
    fixture = tmp_path / "fixture"
    (fixture / "pkg").mkdir(parents=True)
    (fixture / "pkg" / "m.py").write_text("v = 1\n")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    box = LocalSandbox(fixture, scratch_root=scratch)
    box.remove_in_background = True
    with box:
        assert box.run("echo hi > out.txt").exit_code == 0
        folder = box.scratch
    assert not folder.exists()
    reaper.drain()
    assert os.listdir(scratch) == []


def test_pending_folders_are_deleted_before_the_interpreter_ends(tmp_path: Path) -> None:
    for n in range(20):
        (tmp_path / f"endstate-sb-{n}" / "a" / "b").mkdir(parents=True)
    program = textwrap.dedent(f"""
        from pathlib import Path
        from endstate_harness.process import reaper
        for n in range(20):
            reaper.remove_later(Path({str(tmp_path)!r}) / f"endstate-sb-{{n}}")
    """)
    subprocess.run([sys.executable, "-c", program], check=True, timeout=60)
    assert os.listdir(tmp_path) == []
