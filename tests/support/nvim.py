"""Headless Neovim running a configuration snippet verbatim, then reading the server's
findings for a task.json back through Neovim's own ``vim.diagnostic.get``."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

CHECK = """
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


def nvim_or_skip() -> str:
    nvim = shutil.which("nvim")
    if nvim is None:
        print("SKIP REASON: nvim is not installed (apt-get install -y neovim)")
        pytest.skip("nvim is not installed (apt-get install -y neovim)")
    return nvim


def run_config(
    config: str, task_json: Path, work: Path, env: dict[str, str]
) -> dict[str, Any]:
    """Source ``config`` (a user's init.lua, as written) in a headless Neovim, open
    ``task_json`` and return what the diagnostics were (``ok`` false when none came)."""
    nvim = nvim_or_skip()
    init = work / "init.lua"
    init.write_text(config, encoding="utf-8")
    result = work / "result.json"
    check = work / "check.lua"
    check.write_text(
        CHECK.format(task_json=json.dumps(str(task_json)), result=json.dumps(str(result)))
    )
    proc = subprocess.run(
        [nvim, "--headless", "--clean", "-n", "-i", "NONE", "-u", "NONE",
         "-c", f"luafile {init}", "-c", f"luafile {check}"],
        capture_output=True, text=True, timeout=60, cwd=work, env=env,
    )
    assert result.exists(), f"nvim wrote no result: {proc.stdout} {proc.stderr}"
    assert "E5113" not in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    got: dict[str, Any] = json.loads(result.read_text())
    return got


def assert_es101_at_max_step(got: dict[str, Any], task_json: Path) -> None:
    """The planted ``"max_step"`` typo is one ES101 error, at the key, as the CLI places it."""
    assert got["ok"] is True, got
    es101 = [d for d in got["diagnostics"] if d["code"] == "ES101"]
    assert len(es101) == 1, got
    lines = task_json.read_text().splitlines()
    line = next(i for i, t in enumerate(lines) if '"max_step"' in t)
    col = lines[line].index('"max_step"')
    d = es101[0]
    assert (d["lnum"], d["col"], d["end_lnum"], d["end_col"]) == (line, col, line, col + 10)
    assert d["severity"] == 1
