"""The six tools on a real folder: confinement, validation, output, idempotence."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from endstate_harness.agent import confined
from endstate_harness.agent.loop import AgentLoop
from endstate_harness.agent.providers import ScriptedProvider
from endstate_harness.agent.session import SessionStore
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


# ----- one confinement for every file tool (issue 42, class 2) -------------------------------

FILE_CALLS = [
    (ReadTool(), {}),
    (WriteTool(), {"content": "x"}),
    (EditTool(), {"old": "e", "new": "E", "replace_all": True}),
]


def _bounded(tmp_path: Path, code: str, limit: float = 60.0) -> str:
    """Run ``code`` (which prints its answer) in a child with a hard limit: a tool that blocks
    for ever, or holds the GIL in ``re``, fails the test instead of hanging it."""
    repo = Path(__file__).resolve().parents[2]
    try:
        proc = subprocess.run([sys.executable, "-c", code], cwd=repo, capture_output=True,
                              text=True, timeout=limit)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the tool did not return within {limit:g}s")
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def test_every_file_tool_refuses_links_out_and_grep_reads_nothing_through_them(ws, tmp_path):
    os.symlink("/proc/self/environ", ws.live / "env.txt")
    os.symlink("../../outside.txt", ws.live / "pkg" / "climb.txt")
    os.symlink("link.txt", ws.live / "chain.txt")  # in the tree, to a link that leaves it
    for path in ("link.txt", "env.txt", "pkg/climb.txt", "chain.txt", "updir/outside.txt"):
        for tool, extra in FILE_CALLS:
            with pytest.raises(ToolError, match=r"leads out of the workspace|leaves the workspace"):
                tool({"path": path, **extra}, ws)
    out = GrepTool()({"pattern": "secret|PATH|needle"}, ws)
    assert "secret" not in out and "PATH" not in out
    assert out.splitlines() == ["notes.md:1:needle in notes", "pkg/sub/b.py:1:X = 'needle'"]
    assert "link.txt" in GlobTool()({"pattern": "*.txt"}, ws)  # listed by name, never opened
    assert (tmp_path / "outside.txt").read_text() == "secret\n"


def test_links_inside_the_tree_are_followed(ws):
    os.symlink("pkg/sub", ws.live / "alias")
    os.symlink("../a.py", ws.live / "pkg" / "sub" / "up.py")
    assert ReadTool()({"path": "alias/up.py"}, ws) == "def f():\n    return 1\n"
    WriteTool()({"path": "alias/new.txt", "content": "through"}, ws)
    assert (ws.live / "pkg" / "sub" / "new.txt").read_text() == "through"


def test_special_files_are_refused_without_blocking(tmp_path):
    root = tmp_path / "root"
    (root / "pkg").mkdir(parents=True)
    os.mkfifo(root / "fifo")
    os.mkfifo(root / "pkg" / "f.py")
    code = f"""
import socket, time
from pathlib import Path
from endstate_harness.agent.tools import *
root = Path({str(root)!r})
socket.socket(socket.AF_UNIX).bind(str(root / "sock"))
ws = DirectoryWorkspace(root)
for path in ("fifo", "pkg/f.py", "sock"):
    for tool, extra in ((ReadTool(), {{}}), (WriteTool(), {{"content": "x"}}),
                        (EditTool(), {{"old": "a", "new": "b"}})):
        try:
            print("ANSWER", tool({{"path": path, **extra}}, ws))
        except ToolError as exc:
            print("ERROR", exc)
print("GLOB", GlobTool()({{"pattern": "*"}}, ws).replace(chr(10), " "))
print("GREP", GrepTool()({{"pattern": "."}}, ws, timeout_s=20).replace(chr(10), " "))
"""
    out = _bounded(tmp_path, code).splitlines()
    errors = [line for line in out if line.startswith(("ERROR", "ANSWER"))]
    assert len(errors) == 9 and all(line.startswith("ERROR") for line in errors), errors
    assert all("not a regular file" in line for line in errors), errors
    assert out[-2] == "GLOB fifo sock pkg/f.py" and out[-1] == "GREP (no matches)"


def test_a_tree_deeper_than_the_recursion_limit_is_walked_to_a_bound(ws):
    fd = os.open(ws.live, os.O_RDONLY)
    try:
        for _ in range(1100):
            os.mkdir("d", dir_fd=fd)
            deeper = os.open("d", os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = deeper
        os.close(os.open("leaf.py", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd))
    finally:
        os.close(fd)
    try:
        listed = GlobTool()({"pattern": "*.py"}, ws).splitlines()
        assert listed[:2] == ["pkg/a.py", "pkg/sub/b.py"] and "not searched" in listed[-1]
        assert "not searched" in GrepTool()({"pattern": "needle"}, ws)
        with pytest.raises(ToolError, match="folders deep"):
            ReadTool()({"path": "/".join(["d"] * 1100) + "/leaf.py"}, ws)
    finally:  # pytest's own clean-up of tmp_path recurses, and would fail on this tree
        subprocess.run(["find", str(ws.live / "d"), "-delete"], check=True)


def test_a_backtracking_grep_is_cut_at_its_deadline(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    (root / "input.txt").write_text("a" * 48 + "b\n")
    code = f"""
import time
from pathlib import Path
from endstate_harness.agent.tools import *
ws = DirectoryWorkspace(Path({str(root)!r}))
started = time.monotonic()
try:
    GrepTool()({{"pattern": "(a+)+$"}}, ws, timeout_s=2)
except ToolError as exc:
    print(round(time.monotonic() - started, 1), exc)
"""
    took, _, said = _bounded(tmp_path, code).strip().partition(" ")
    assert "did not finish within 2s" in said and float(took) < 15


def test_the_run_deadline_is_honoured_during_a_tool_call(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    (root / "input.txt").write_text("a" * 48 + "b\n")
    code = f"""
import time
from pathlib import Path
from endstate_harness.agent.loop import AgentLoop
from endstate_harness.agent.providers import ScriptedProvider
from endstate_harness.agent.session import SessionStore
from endstate_harness.agent.tools import DirectoryWorkspace
store = SessionStore(Path({str(tmp_path / "s.sqlite3")!r}))
steps = [[{{"tool": "grep", "args": {{"pattern": "(a+)+$"}}}}],
         [{{"tool": "read", "args": {{"path": "input.txt"}}}}]]
loop = AgentLoop(ScriptedProvider(steps), DirectoryWorkspace(Path({str(root)!r})), store.create(),
                 deadline=time.monotonic() + 3, tool_timeout_s=600)
started = time.monotonic()
result = loop.start("go")
print(round(time.monotonic() - started, 1), result.timed_out, result.tool_calls)
"""
    took, timed_out, calls = _bounded(tmp_path, code).split()
    assert float(took) < 20 and timed_out == "True" and calls == "1"


def test_a_tool_that_crashes_is_an_error_for_the_model_not_the_run(tmp_path):
    class Crashing(GlobTool):
        def run(self, arguments, workspace, **limits):
            raise RecursionError("maximum recursion depth exceeded")

    root = tmp_path / "root"
    root.mkdir()
    steps = [[{"tool": "glob", "args": {"pattern": "*"}}]]
    loop = AgentLoop(ScriptedProvider(steps), DirectoryWorkspace(root),
                     SessionStore(tmp_path / "s.sqlite3").create(),
                     tools=[Crashing(), ReadTool()])
    result = loop.start("go")
    answers = [m.tool_result for m in loop.session.messages if m.tool_result is not None]
    assert result.stop_reason != "error" and result.tool_calls == 1
    assert answers[0] is not None and answers[0].is_error
    assert "RecursionError" in answers[0].content


def test_a_link_swapped_in_while_the_tools_read_is_never_followed(ws, tmp_path):
    """A process of the agent's still running can swap a name between a file and a link out
    between a check and an open: the tools open what they checked, so nothing leaks."""
    (tmp_path / "outdir").mkdir()
    (tmp_path / "outdir" / "f.txt").write_text("secret\n")
    swap = f"""
import os
live, out = {str(ws.live)!r}, {str(tmp_path)!r}
os.chdir(live)
while True:
    os.symlink(out + "/outside.txt", ".f.link"); os.rename(".f.link", "f.txt")
    open(".f.real", "w").write("plain\\n"); os.rename(".f.real", "f.txt")
    os.symlink(out + "/outdir", ".d.link"); os.rename(".d.link", "d")
    os.unlink("d"); os.mkdir("d"); open("d/f.txt", "w").write("plain\\n")
    os.rename("d", ".d.old"); os.unlink(".d.old/f.txt"); os.rmdir(".d.old")
"""
    swapper = subprocess.Popen([sys.executable, "-c", swap])
    answers: list[str] = []
    try:
        deadline = time.monotonic() + 4
        while time.monotonic() < deadline:
            for path in ("f.txt", "d/f.txt"):
                try:
                    answers.append(ReadTool()({"path": path}, ws))
                except ToolError as exc:
                    answers.append(f"error: {exc}")
    finally:
        swapper.kill()
        swapper.wait()
    assert len(answers) > 200, "the race ran too few times to mean anything"
    assert any(a == "plain\n" for a in answers)
    assert not [a for a in answers if "secret" in a]


def test_grep_program_imports_nothing_from_the_tree(ws, tmp_path):
    """grep's program runs with the agent's tree as its working folder: a planted module
    named like one it imports must not run in its place."""
    marker = tmp_path / "imported"
    for name in ("re", "json", "stat", "fnmatch", "collections"):
        (ws.live / f"{name}.py").write_text(f"open({str(marker)!r}, 'a').write('{name} ')\n")
    assert "notes.md:1:needle in notes" in GrepTool()({"pattern": "needle"}, ws)
    assert not marker.exists(), marker.read_text()


def test_the_confinement_module_ships_with_the_standard_library_only():
    tree = ast.parse(Path(confined.__file__).read_text(encoding="utf-8"))
    first = next(n for n in tree.body if not isinstance(n, ast.Expr))
    assert isinstance(first, ast.Import) and first.names[0].name == "sys"
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [
                node.module or ""]
            assert all(n.split(".")[0] in sys.stdlib_module_names for n in names), names
