"""No toolkit process imports code from the folder it works on.

A task repository (or a workspace) holds its own ``endstate_author/``, ``endstate_harness/``
and ``endstate_lsp/`` packages and a ``sitecustomize.py``, each of which writes a marker file
when imported. Every way the toolkit is started on such a folder runs with the folder as its
working directory, as users and editors start it:

* the CLI (the ``endstate-author`` console script): lint, and prove, which starts helper
  processes of its own (the watchdog);
* the language server as the VS Code extension starts it with the
  ``endstate-author.interpreter`` setting (the command line comes from the extension's own
  compiled ``discoverServer``), and as the documented Neovim set-up starts it (headless
  Neovim sourcing the README's block);
* prove on save in a trusted workspace (the server's own prove child, started in the suite's
  folder);
* both pre-commit hooks, installed and run by the real ``pre-commit``.

None may write a marker.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.editors.conftest import vsix  # noqa: F401  (the built extension, for its logic.js)
from tests.editors.test_precommit import PRE_COMMIT, clean_env, home, hook_repo  # noqa: F401
from tests.reliability.lspclient import LspClient
from tests.support.nvim import nvim_or_skip, run_config
from tests.support.snippets import ROOT, fenced
from tests.support.tasks import TaskBuilder, good

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

BIN = Path(sys.executable).parent
SCRIPT = BIN / "endstate-author"
WRONG: dict[str, str | bytes] = {"chunker/core.py": "def chunk(items, size):\n    return [items]\n"}
"""A solution that fails its tests: prove has an ES902 to report when it really ran."""

PLANTED = ("endstate_author", "endstate_harness", "endstate_lsp")


def plant(folder: Path, markers: Path) -> None:
    """The folder's own copies of the toolkit's packages (and a sitecustomize): importing
    any of them writes ``markers/<name>-<pid>`` with the importing process's argv."""
    markers.mkdir(parents=True, exist_ok=True)
    body = (
        "import os, sys\n"
        f"with open(os.path.join({str(markers)!r}, __name__ + '-' + str(os.getpid())), 'w') as f:\n"
        "    f.write(repr(sys.argv))\n"
    )
    for name in PLANTED:
        (folder / name).mkdir(parents=True, exist_ok=True)
        (folder / name / "__init__.py").write_text(body)
        (folder / name / "__main__.py").write_text(body)
        (folder / name / "hooks.py").write_text(body)
    (folder / "sitecustomize.py").write_text(body)


def written(markers: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(markers.iterdir())}


@pytest.fixture
def workspace(tmp_path: Path) -> tuple[Path, Path, Path]:
    """(workspace, its task, the markers folder): the task sits directly in the workspace,
    which is also the suite folder prove on save runs in."""
    work = tmp_path / "work"
    markers = tmp_path / "markers"
    root = TaskBuilder(work)(good(id="alpha"), solution=WRONG)
    plant(work, markers)
    return work, root, markers


def env_for(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ENDSTATE_LSP")}
    env["ENDSTATE_AUTHOR_CACHE"] = str(tmp / "cache")
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    return env


def test_the_cli_never_imports_the_workspace(workspace: tuple[Path, Path, Path]) -> None:
    work, _root, markers = workspace
    env = env_for(work.parent)
    lint = subprocess.run([str(SCRIPT), "lint", "alpha"], cwd=work, env=env,
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert lint.returncode == 0, lint.stdout + lint.stderr
    prove = subprocess.run([str(SCRIPT), "prove", "alpha", "--sandbox", "local"], cwd=work,
                           env=env, capture_output=True, text=True, timeout=600)  # fmt: skip
    assert prove.returncode == 1 and "ES902" in prove.stdout, prove.stdout + prove.stderr
    assert written(markers) == {}


def vscode_server_command(work: Path) -> list[str]:
    """What the VS Code extension runs for ``endstate-author.interpreter`` set to this
    interpreter: its own compiled ``discoverServer``, asked by node."""
    logic = ROOT / "editors" / "vscode" / "out" / "src" / "logic.js"
    assert logic.exists(), "the extension's build leaves out/src/logic.js"
    script = (
        "const l = require(process.argv[1]); const fs = require('fs');\n"
        "const found = l.discoverServer({settings: {interpreter: process.argv[2]},\n"
        "  workspaceFolder: process.argv[3], env: process.env, platform: process.platform,\n"
        "  isFile: (f) => { try { return fs.statSync(f).isFile(); } catch { return false; } }});\n"
        "process.stdout.write(JSON.stringify(found));\n"
    )
    done = subprocess.run(["node", "-e", script, str(logic), sys.executable, str(work)],
                          capture_output=True, text=True, timeout=60, check=True)  # fmt: skip
    found = json.loads(done.stdout)
    assert found["found"] and found["server"]["source"] == "setting:interpreter", found
    return [found["server"]["command"], *found["server"]["baseArgs"], "lsp"]


def lint_in_server(command: list[str], work: Path, root: Path, env: dict[str, str]) -> None:
    """Start the server as ``command`` in ``work`` (the workspace folder, as the extension
    does), open the task and wait for its diagnostics."""
    with LspClient(env=env, cwd=work, command=command) as client:
        client.initialize({"debounceMs": 0}, root=work)
        uri = (root / "task.json").as_uri()
        client.open(uri, (root / "task.json").read_text())
        assert client.diagnostics(uri, 1, timeout=60) is not None, client.stderr


def test_the_server_as_vscode_starts_it_never_imports_the_workspace(
    workspace: tuple[Path, Path, Path], vsix: Path  # noqa: F811
) -> None:
    work, root, markers = workspace
    lint_in_server(vscode_server_command(work), work, root, env_for(work.parent))
    assert written(markers) == {}


def test_the_server_as_neovim_starts_it_never_imports_the_workspace(
    workspace: tuple[Path, Path, Path],
) -> None:
    """Headless Neovim sources the README's block verbatim, started in the workspace."""
    nvim_or_skip()
    work, _root, markers = workspace
    bad = TaskBuilder(work)(dict(good(id="beta"), max_step=5))
    config = fenced(ROOT / "README.md", "lua", 'require("endstate_author")')
    got = run_config(config, bad / "task.json", work, env_for(work.parent))
    assert got["ok"] is True and got["clients"] == 1, got
    assert written(markers) == {}


def test_prove_on_save_never_imports_the_workspace(workspace: tuple[Path, Path, Path]) -> None:
    """Trusted: the server's own prove child runs in the suite's folder (the workspace) and
    reports the solution's failure; no marker."""
    work, root, markers = workspace
    env = env_for(work.parent)
    with LspClient(env=env, cwd=work, command=[str(SCRIPT), "lsp"]) as client:
        client.initialize({"trusted": True, "debounceMs": 0, "sandbox": "local"}, root=work)
        uri = (root / "task.json").as_uri()
        client.open(uri, (root / "task.json").read_text())
        client.notify("textDocument/didSave", {"textDocument": {"uri": uri}})
        deadline = time.monotonic() + 300
        codes: list[str] = []
        while "ES902" not in codes and not written(markers) and time.monotonic() < deadline:
            try:
                message = client.inbox.get(timeout=1)
            except Exception:  # queue.Empty: keep waiting
                continue
            if message.get("method") == "textDocument/publishDiagnostics":
                if message["params"]["uri"] == uri:
                    codes = [str(d.get("code")) for d in message["params"]["diagnostics"]]
    assert written(markers) == {}
    assert "ES902" in codes, codes


@pytest.mark.parametrize("hook", ["endstate-author-lint", "endstate-author-prove"])
def test_the_pre_commit_hooks_never_import_the_repository(
    hook: str, home: Path, hook_repo: tuple[Path, str], tmp_path: Path  # noqa: F811
) -> None:
    """The real pre-commit runs each hook in a repository of tasks that holds its own
    packages; the hook reports the task's finding, and imports none of them."""
    env = clean_env(home)
    work = tmp_path / "repo"
    markers = tmp_path / "markers"
    TaskBuilder(work / "tasks")(good(id="alpha"), solution=WRONG)
    plant(work, markers)
    snap, rev = hook_repo
    args = "\n        args: [--sandbox, local]" if hook.endswith("prove") else ""
    (work / ".pre-commit-config.yaml").write_text(
        f"repos:\n  - repo: {snap}\n    rev: {rev}\n    hooks:\n      - id: {hook}{args}\n"
    )
    subprocess.run(["git", "init", "-q"], cwd=work, env=env, check=True)
    subprocess.run(["git", "add", "-A"], cwd=work, env=env, check=True)
    done = subprocess.run(
        [str(PRE_COMMIT), "run", hook, "--verbose", "--files", "tasks/alpha/task.json",
         "tasks/alpha/solution/chunker/core.py"],
        cwd=work, env=env, capture_output=True, text=True, timeout=800,
    )  # fmt: skip
    out = done.stdout + done.stderr
    assert written(markers) == {}, out
    if hook.endswith("prove"):
        assert done.returncode == 1 and "ES902" in out, out
    else:
        assert done.returncode == 0 and "endstate-author lint" in out, out
    shutil.rmtree(work, ignore_errors=True)
