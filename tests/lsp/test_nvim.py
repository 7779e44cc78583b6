"""A real editor: headless Neovim with editors/nvim/ attaches the server to a task.json and
reads the server's findings back through Neovim's own ``vim.diagnostic.get``."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.rules.conftest import GOOD_MANIFEST, TaskBuilder

NVIM_DIR = Path(__file__).resolve().parents[2] / "editors" / "nvim"

SCRIPT = """
package.path = {lua_dir} .. "/?.lua;" .. package.path
require("endstate_author").setup({{
  cmd = {cmd},
  settings = {{ debounceMs = 0 }},
}})
vim.cmd("edit " .. vim.fn.fnameescape({task_json}))
local ok = vim.wait(20000, function() return #vim.diagnostic.get(0) > 0 end, 50)
local out = {{}}
for _, d in ipairs(vim.diagnostic.get(0)) do
  table.insert(out, {{ code = d.code or (d.user_data and d.user_data.lsp and d.user_data.lsp.code),
    lnum = d.lnum, col = d.col, end_lnum = d.end_lnum, end_col = d.end_col,
    severity = d.severity }})
end
local f = io.open({result}, "w")
local n = #vim.lsp.get_active_clients()
f:write(vim.fn.json_encode({{ ok = ok, diagnostics = out, clients = n }}))
f:close()
for _, c in ipairs(vim.lsp.get_active_clients()) do c.stop() end
vim.wait(2000, function() return #vim.lsp.get_active_clients() == 0 end, 50)
vim.cmd("qa!")
"""


def lua(s: str) -> str:
    return json.dumps(s)


def test_neovim_shows_server_diagnostics(tmp_path: Path) -> None:
    nvim = shutil.which("nvim")
    if nvim is None:
        print("SKIP REASON: nvim is not installed (apt-get install -y neovim)")
        pytest.skip("nvim is not installed (apt-get install -y neovim)")
    data = dict(GOOD_MANIFEST, max_step=5)
    root = TaskBuilder(tmp_path / "suite")(data)
    result = tmp_path / "result.json"
    cmd = "{" + ", ".join(lua(x) for x in (sys.executable, "-m", "endstate_lsp")) + "}"
    script = tmp_path / "test.lua"
    script.write_text(
        SCRIPT.format(
            lua_dir=lua(str(NVIM_DIR)),
            cmd=cmd,
            task_json=lua(str(root / "task.json")),
            result=lua(str(result)),
        )
    )
    proc = subprocess.run(
        [
            nvim,
            "--headless",
            "--clean",
            "-n",
            "-i",
            "NONE",
            "-u",
            "NONE",
            "-c",
            f"luafile {script}",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert result.exists(), f"nvim wrote no result: {proc.stdout} {proc.stderr}"
    got = json.loads(result.read_text())
    assert got["ok"] is True
    es101 = [d for d in got["diagnostics"] if d["code"] == "ES101"]
    assert len(es101) == 1
    lines = (root / "task.json").read_text().splitlines()
    line = next(i for i, t in enumerate(lines) if '"max_step"' in t)
    col = lines[line].index('"max_step"')
    d = es101[0]
    assert (d["lnum"], d["col"], d["end_lnum"], d["end_col"]) == (line, col, line, col + 10)
    assert d["severity"] == 1
