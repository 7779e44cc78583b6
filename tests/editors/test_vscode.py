"""The VS Code extension: built, unit-tested and packaged for real, then the .vsix inspected.

``scripts/build-vscode.sh`` runs ``npm ci`` (pinned versions from package-lock.json, from the
npm registry), node's test runner over the pure logic, esbuild and ``vsce package``. The
checks below read the produced .vsix: what VS Code would install, and the extension's
settings against the language server's own defaults, so the two cannot drift apart silently.
The .vsix is built once per session (tests/editors/conftest.py); test_vscode_e2e.py runs it
inside a real VS Code.
"""

from __future__ import annotations

import json
import re
import subprocess
import zipfile
from pathlib import Path
from typing import Any

import pytest

from endstate_author import __version__
from endstate_author.schema import SHIPPED

ROOT = Path(__file__).resolve().parents[2]
EXT = ROOT / "editors" / "vscode"
NODE_BUILTINS = {
    "assert", "buffer", "child_process", "crypto", "events", "fs", "net", "os", "path",
    "process", "stream", "string_decoder", "tty", "url", "util", "zlib",
}  # fmt: skip

# one worker of a parallel run: tests/conftest.py's SHARED_GROUPS says why
pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


def manifest() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((EXT / "package.json").read_text(encoding="utf-8"))
    return data


def test_vsix_holds_exactly_the_runtime_files(vsix: Path) -> None:
    with zipfile.ZipFile(vsix) as z:
        names = set(z.namelist())
    assert names == {
        "extension.vsixmanifest",
        "[Content_Types].xml",
        "extension/package.json",
        "extension/readme.md",
        "extension/LICENSE.md",
        "extension/schemas/task.schema.json",
        "extension/dist/extension.js",
    }
    assert vsix.stat().st_size < 1_000_000, "the bundle should stay small"


def test_packaged_schema_is_the_shipped_one(vsix: Path) -> None:
    with zipfile.ZipFile(vsix) as z:
        packaged = z.read("extension/schemas/task.schema.json")
        pkg = json.loads(z.read("extension/package.json"))
    assert packaged == SHIPPED.read_bytes()
    (rule,) = pkg["contributes"]["jsonValidation"]
    assert rule["fileMatch"] == "**/task.json"
    # served by the extension (full schema, or hints only while the server runs), read from
    # the packaged copy above
    assert rule["url"] == "endstate-author-schema:/task.schema.json"
    assert {"id": "json", "filenames": ["task.json", "oracle.json"]} in pkg["contributes"][
        "languages"
    ]


def test_bundle_needs_only_vscode_and_node(vsix: Path) -> None:
    """No node_modules ship, so the bundle may require nothing but VS Code and node itself."""
    with zipfile.ZipFile(vsix) as z:
        code = z.read("extension/dist/extension.js").decode()
    required = set(re.findall(r"require\(\"([^\"]+)\"\)", code))
    required = {r.removeprefix("node:") for r in required}
    assert "vscode" in required
    assert required - {"vscode"} <= NODE_BUILTINS, required - {"vscode"} - NODE_BUILTINS
    assert "LanguageClient" in code or "languageclient" in code.lower()


def test_vsix_manifest_and_activation(vsix: Path) -> None:
    with zipfile.ZipFile(vsix) as z:
        xml = z.read("extension.vsixmanifest").decode()
        pkg = json.loads(z.read("extension/package.json"))
    assert f'Id="endstate-author" Version="{__version__}" Publisher="endstate-author"' in xml
    assert f'Value="{pkg["engines"]["vscode"]}"' in xml
    assert pkg["main"] == "./dist/extension.js"
    assert pkg["activationEvents"] == ["workspaceContains:**/task.json"]
    trust = pkg["capabilities"]["untrustedWorkspaces"]
    assert trust["supported"] == "limited" and "lint" in trust["description"]
    assert set(trust["restrictedConfigurations"]) == {
        "endstate-author.path",
        "endstate-author.interpreter",
    }
    commands = {c["command"] for c in pkg["contributes"]["commands"]}
    assert commands == {
        "endstate-author.proveTask",
        "endstate-author.proveSuite",
        "endstate-author.restartServer",
        "endstate-author.showServerLog",
    }
    from endstate_lsp.prove_on_save import PROVE_COMMAND

    assert PROVE_COMMAND not in commands, "the server's code lens command is registered by it"


def test_settings_mirror_the_server() -> None:
    """Same names, defaults and sandbox choices as the server's Settings."""
    from endstate_lsp.settings import SANDBOXES, Settings

    props = manifest()["contributes"]["configuration"]["properties"]
    defaults = Settings()
    assert props["endstate-author.proveOnSave"]["default"] is defaults.prove_on_save
    assert props["endstate-author.debounceMs"]["default"] == defaults.debounce_ms
    assert props["endstate-author.sandbox"]["default"] == defaults.sandbox
    assert set(props["endstate-author.sandbox"]["enum"]) == set(SANDBOXES)
    assert props["endstate-author.debounceMs"]["maximum"] == 10000
    assert set(props) == {
        f"endstate-author.{k}"
        for k in ("path", "interpreter", "proveOnSave", "debounceMs", "sandbox")
    }
    # a `machine` or `machine-overridable` setting is dropped from User settings wherever the
    # extension host runs remotely (code-server, Remote-SSH): the path must work from there
    assert {props[k].get("scope") for k in props} <= {None, "window", "resource"}
    # `trusted` is deliberately not a setting: a workspace must not be able to trust itself
    assert "endstate-author.trusted" not in props


def test_versions_pinned_and_locked() -> None:
    pkg = manifest()
    for section in ("dependencies", "devDependencies"):
        for name, version in pkg[section].items():
            assert re.fullmatch(r"\d+\.\d+\.\d+", version), f"{name} is not pinned: {version}"
    assert pkg["dependencies"]["vscode-languageclient"].startswith("9.")
    lock = json.loads((EXT / "package-lock.json").read_text(encoding="utf-8"))
    assert lock["packages"][""]["devDependencies"] == pkg["devDependencies"]
    # every locked package (all but the root entry) carries a sha512 integrity hash, so npm
    # refuses any tarball that differs from the one locked, wherever npm is configured to look
    locked = {k: v for k, v in lock["packages"].items() if k and not v.get("link")}
    assert locked, "the lockfile locks no package"
    weak = {
        k: v.get("integrity")
        for k, v in locked.items()
        if not re.fullmatch(r"sha512-[A-Za-z0-9+/]{86}==", str(v.get("integrity", "")))
    }
    assert not weak, weak


def test_languageclient_engine_fits_ours(vsix: Path) -> None:
    """vscode-languageclient states the oldest VS Code it runs on; ours must not be older."""
    lc = json.loads((EXT / "node_modules" / "vscode-languageclient" / "package.json").read_text())

    def floor(spec: str) -> tuple[int, ...]:
        return tuple(int(x) for x in spec.lstrip("^~>=").split("."))

    assert floor(manifest()["engines"]["vscode"]) >= floor(lc["engines"]["vscode"])


def test_node_unit_tests(vsix: Path) -> None:
    """The pure logic's tests on node's own runner (compiled by the build into out/)."""
    run = subprocess.run(
        ["node", "--test", "out/test/"], cwd=EXT, capture_output=True, text=True, timeout=120
    )
    out = run.stdout + run.stderr
    assert run.returncode == 0, out
    passed = int(re.search(r"^# pass (\d+)$", out, re.M).group(1))  # type: ignore[union-attr]
    failed = int(re.search(r"^# fail (\d+)$", out, re.M).group(1))  # type: ignore[union-attr]
    print(f"node --test: {passed} passed, {failed} failed")
    assert passed >= 10 and failed == 0
