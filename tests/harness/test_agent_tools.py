"""The six tools on a real folder: confinement, validation, output, idempotence."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from endstate_harness.agent.tools import (
    BashTool,
    DirectoryWorkspace,
    EditTool,
    GlobTool,
    GrepTool,
    ReadTool,
    ToolError,
    WriteTool,
    default_tools,
)


@pytest.fixture
def ws(tmp_path: Path) -> DirectoryWorkspace:
    root = tmp_path / "root"
    (root / "pkg" / "sub").mkdir(parents=True)
    (root / "pkg" / "a.py").write_text("def f():\n    return 1\n")
    (root / "pkg" / "sub" / "b.py").write_text("X = 'needle'\n")
    (root / "notes.md").write_text("needle in notes\n")
    (tmp_path / "outside.txt").write_text("secret\n")
    os.symlink(tmp_path / "outside.txt", root / "link.txt")
    os.symlink(tmp_path, root / "updir")
    return DirectoryWorkspace(root)


@pytest.mark.parametrize(
    "path",
    ["../outside.txt", "/etc/passwd", "link.txt", "updir/outside.txt", "pkg/../../outside.txt", ""],
)
def test_paths_that_escape_are_refused(ws, path):
    for tool, extra in ((ReadTool(), {}), (WriteTool(), {"content": "x"})):
        with pytest.raises(ToolError):
            tool({"path": path, **extra}, ws)
    assert (ws.live.parent / "outside.txt").read_text() == "secret\n"


def test_read_write_and_ranges(ws):
    assert ReadTool()({"path": "pkg/a.py"}, ws) == "def f():\n    return 1\n"
    assert ReadTool()({"path": "pkg/a.py", "offset": 2, "limit": 1}, ws) == "    return 1\n"
    WriteTool()({"path": "new/dir/c.txt", "content": "hi"}, ws)
    assert (ws.live / "new" / "dir" / "c.txt").read_text() == "hi"
    with pytest.raises(ToolError, match="no such file"):
        ReadTool()({"path": "missing.py"}, ws)


def test_bad_arguments_are_tool_errors(ws):
    with pytest.raises(ToolError, match="bad arguments"):
        ReadTool()({"file": "x"}, ws)
    with pytest.raises(ToolError, match="bad arguments"):
        WriteTool()({"path": "x", "content": 3}, ws)


def test_edit_is_exact_unique_and_converges(ws):
    edit = EditTool()
    args = {"path": "pkg/a.py", "old": "return 1", "new": "return (1)"}
    edit(args, ws)
    assert "return (1)" in (ws.live / "pkg/a.py").read_text()
    assert "already" in edit(args, ws)  # re-running after a resume is harmless
    assert (ws.live / "pkg/a.py").read_text().count("(1)") == 1
    (ws.live / "d.txt").write_text("x x")
    with pytest.raises(ToolError, match="2 times"):
        edit({"path": "d.txt", "old": "x", "new": "y"}, ws)
    edit({"path": "d.txt", "old": "x", "new": "y", "replace_all": True}, ws)
    with pytest.raises(ToolError, match="not found"):
        edit({"path": "d.txt", "old": "zzz", "new": "q"}, ws)


def test_glob_and_grep_use_forward_slash_fnmatch(ws):
    assert GlobTool()({"pattern": "*.py"}, ws).splitlines() == ["pkg/a.py", "pkg/sub/b.py"]
    assert GlobTool()({"pattern": "**/*.md"}, ws) == "notes.md"
    assert GlobTool()({"pattern": "*.rs"}, ws) == "(no matches)"
    hits = GrepTool()({"pattern": "needle"}, ws).splitlines()
    assert hits == ["notes.md:1:needle in notes", "pkg/sub/b.py:1:X = 'needle'"]
    assert (
        GrepTool()({"pattern": "NEEDLE", "glob": "*.py", "ignore_case": True}, ws)
        == "pkg/sub/b.py:1:X = 'needle'"
    )
    with pytest.raises(ToolError, match="invalid regex"):
        GrepTool()({"pattern": "("}, ws)


def test_bash_runs_in_the_root_with_a_clean_environment(ws, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-must-not-leak")
    out = BashTool()({"command": "pwd; echo key=$OPENAI_API_KEY; exit 3"}, ws)
    assert out.startswith("exit_code: 3") and str(ws.live) in out
    assert "sk-must-not-leak" not in out


def test_bash_timeout_kills_the_whole_group(ws, tmp_path):
    marker = tmp_path / "orphan"
    started = time.monotonic()
    out = BashTool()({"command": f"(sleep 2; touch {marker}) & sleep 20"}, ws, timeout_s=0.5)
    assert "timed out" in out and time.monotonic() - started < 5
    time.sleep(2.5)
    assert not marker.exists(), "a background child survived the timeout"


def test_tool_specs_are_json_schemas():
    names = [t.spec()["name"] for t in default_tools()]
    assert names == ["read", "write", "edit", "glob", "grep", "bash"]
    assert [t.name for t in default_tools() if not t.idempotent] == ["bash"]
