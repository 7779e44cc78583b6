"""copy_tree / overlay_tree: the fast path for a fresh destination and the careful one.

A sandbox copy creates each file with ``O_EXCL`` (nothing there yet, the common case) and
falls back to replacing what is there otherwise. Both must give the same tree: same bytes,
same permission bits (plus u+rw), links as links, and never a write through a link.
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from endstate_harness.sandbox import tree
from endstate_harness.sandbox.tree import copy_tree, overlay_tree


def _source(root: Path) -> Path:
    src = root / "src"
    (src / "pkg" / "deep").mkdir(parents=True)
    (src / "pkg" / "__init__.py").write_text("")
    (src / "pkg" / "deep" / "big.bin").write_bytes(os.urandom(3 << 20))  # several sendfiles
    script = src / "run.sh"
    script.write_text("#!/bin/sh\necho hi\n")
    script.chmod(0o755)
    frozen = src / "frozen.txt"
    frozen.write_text("read-only\n")
    frozen.chmod(0o444)
    (src / "empty").write_bytes(b"")
    (src / "link").symlink_to("pkg/__init__.py")
    return src


def _listing(root: Path) -> dict[str, tuple[str, int, bytes]]:
    out = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        info = path.lstat()
        if stat.S_ISLNK(info.st_mode):
            out[rel] = ("link", 0, os.readlink(path).encode())
        elif stat.S_ISDIR(info.st_mode):
            out[rel] = ("dir", 0, b"")
        else:
            out[rel] = ("file", stat.S_IMODE(info.st_mode), path.read_bytes())
    return out


def test_a_fresh_copy_keeps_bytes_modes_and_links(tmp_path: Path) -> None:
    src = _source(tmp_path)
    copy_tree(src, tmp_path / "dst")
    got, want = _listing(tmp_path / "dst"), _listing(src)
    assert got.keys() == want.keys()
    for rel, (kind, mode, data) in want.items():
        if kind == "file":
            mode |= stat.S_IRUSR | stat.S_IWUSR  # a copy the sandbox may rewrite
        assert got[rel] == (kind, mode, data), rel
    assert os.stat(tmp_path / "dst" / "run.sh").st_mode & stat.S_IXUSR


def test_the_same_tree_when_the_kernel_copy_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*_args: object) -> int:
        raise OSError(errno.EINVAL, "sendfile not supported here")

    src = _source(tmp_path)
    monkeypatch.setattr(tree.os, "sendfile", refuse)
    copy_tree(src, tmp_path / "dst")
    assert _listing(tmp_path / "dst")["pkg/deep/big.bin"] == _listing(src)["pkg/deep/big.bin"]


def test_overlay_replaces_what_is_there_and_never_writes_through_links(tmp_path: Path) -> None:
    src = _source(tmp_path)
    outside = tmp_path / "outside.txt"
    outside.write_text("host file\n")
    dst = tmp_path / "dst"
    (dst / "pkg").mkdir(parents=True)
    (dst / "run.sh").symlink_to(outside)  # a link where a file goes
    (dst / "empty").symlink_to(tmp_path / "nowhere")  # a dangling one
    (dst / "frozen.txt").write_text("old\n")
    (dst / "frozen.txt").chmod(0o400)  # read-only: replaced all the same
    os.link(outside, dst / "pkg" / "__init__.py")  # a hard link to a host file
    (dst / "kept.txt").write_text("the agent's\n")
    overlay_tree(src, dst)
    assert outside.read_text() == "host file\n"
    assert not (tmp_path / "nowhere").exists()
    listing = _listing(dst)
    assert listing["run.sh"][0] == "file" and listing["empty"] == _listing(src)["empty"]
    assert listing["frozen.txt"][2] == b"read-only\n"
    assert listing["pkg/__init__.py"][2] == b""
    assert listing["kept.txt"][2] == b"the agent's\n"  # an overlay adds, never deletes


def test_a_link_where_a_folder_goes_is_replaced_not_entered(tmp_path: Path) -> None:
    src = _source(tmp_path)
    host = tmp_path / "host"
    host.mkdir()
    dst = tmp_path / "dst"
    dst.mkdir()
    (dst / "pkg").symlink_to(host, target_is_directory=True)
    overlay_tree(src, dst)
    assert list(host.iterdir()) == []
    assert (dst / "pkg").is_dir() and not (dst / "pkg").is_symlink()
    assert (dst / "pkg" / "deep" / "big.bin").stat().st_size == 3 << 20


REMOVE_UNDER_A_READ_ONLY_PARENT = """\
import os, stat, sys
from pathlib import Path
from endstate_harness.fdtree import remove_tree
parent = Path(sys.argv[1])
remove_tree(parent / "tree")
print(oct(stat.S_IMODE(os.stat(parent).st_mode)), (parent / "tree").exists(),
      (parent / "tree" / "ro").exists())
"""


def test_removing_a_tree_never_changes_the_folder_holding_it(tmp_path: Path) -> None:
    """The harness may widen permissions inside a tree it removes (an agent's read-only
    folders), never on the folder holding it: before, a root that could not be removed had its
    parent chmod-ed to 0700 (/tmp or /dev/shm, for a scratch folder). Run without the power to
    ignore permissions (root with every capability dropped)."""
    if shutil.which("setpriv") is None:
        pytest.skip("needs setpriv to drop the capabilities that ignore permissions")
    parent = tmp_path / "holder"
    (parent / "tree" / "ro").mkdir(parents=True)
    (parent / "tree" / "ro" / "f").write_text("x")
    os.chmod(parent / "tree" / "ro", 0o555)
    os.chmod(parent, 0o555)  # the root cannot leave it; its contents can
    try:
        proc = subprocess.run(
            ["setpriv", "--bounding-set", "-all", "--inh-caps", "-all", "--", sys.executable,
             "-c", REMOVE_UNDER_A_READ_ONLY_PARENT, str(parent)],
            capture_output=True, text=True, timeout=60,
            env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "harness")},
        )
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.split() == ["0o555", "True", "False"], proc.stdout
    finally:
        os.chmod(parent, 0o755)


def test_remove_tree_takes_a_file_and_leaves_its_folder_as_it_was(tmp_path: Path) -> None:
    """A file is removed like a tree (a pooled container's live tree is emptied entry by
    entry), and the folder holding what is removed keeps its mode."""
    folder = tmp_path / "live"
    folder.mkdir()
    os.chmod(folder, 0o755)
    (folder / "a.txt").write_text("x")
    tree.remove_tree(folder / "a.txt")
    assert not (folder / "a.txt").exists()
    assert stat.S_IMODE(folder.stat().st_mode) == 0o755
