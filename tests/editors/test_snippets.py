"""The Helix and Zed configurations parse, start this package's server as the editor would,
and use only settings the server reads (with its defaults): neither editor can be installed
here, so this is what keeps the files from drifting away from the server."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

from endstate_author.schema import SHIPPED
from endstate_lsp.settings import SECTION, Settings
from tests.rules.conftest import GOOD_MANIFEST, TaskBuilder
from tests.support.lspclient import LspClient

EDITORS = Path(__file__).resolve().parents[2] / "editors"


def test_helix_languages_toml() -> None:
    data = tomllib.loads((EDITORS / "helix" / "languages.toml").read_text(encoding="utf-8"))
    server = data["language-server"]["endstate-author"]
    assert server["command"] == "endstate-author" and server["args"] == ["lsp"]
    config = server["config"][SECTION]
    settings = Settings()
    assert settings.update(config) == []  # every value is one the server accepts
    assert config == {"trusted": False, "proveOnSave": True, "debounceMs": 150, "sandbox": "auto"}
    assert (settings.trusted, settings.prove_on_save) == (False, True)
    (language,) = data["language"]
    assert language["file-types"] == [{"glob": "task.json"}]
    assert language["grammar"] == "json"
    assert "endstate-author" in language["language-servers"]


def test_helix_command_exists() -> None:
    """``endstate-author lsp`` is a real subcommand of this package's CLI."""
    out = subprocess.run(
        [sys.executable, "-m", "endstate_author", "lsp", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0 and "language server" in out.stdout


def test_helix_starts_the_server_it_names_and_gets_findings(tmp_path: Path) -> None:
    """The command and args of languages.toml, found on PATH (the development install's bin),
    initialised as Helix does (``config`` as initializationOptions): an ES101 comes back."""
    data = tomllib.loads((EDITORS / "helix" / "languages.toml").read_text(encoding="utf-8"))
    server = data["language-server"]["endstate-author"]
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    command = shutil.which(server["command"], path=env["PATH"])
    assert command is not None, f"{server['command']} is not on PATH"
    root = TaskBuilder(tmp_path / "suite")(dict(GOOD_MANIFEST, max_step=5))
    manifest = root / "task.json"
    with LspClient(env=env, cwd=tmp_path, command=[command, *server["args"]]) as client:
        client.initialize(server["config"], root=tmp_path)
        client.open(manifest.as_uri(), manifest.read_text())
        found = client.diagnostics(manifest.as_uri(), 1, timeout=30)
    assert found is not None, "no diagnostics within 30 s"
    assert [d["code"] for d in found if d["code"] == "ES101"] == ["ES101"], found


def test_zed_settings() -> None:
    text = (EDITORS / "zed" / "settings.json").read_text(encoding="utf-8")
    data = json.loads(re.sub(r"^\s*//.*$", "", text, flags=re.M))
    (schema,) = data["lsp"]["json-language-server"]["settings"]["json"]["schemas"]
    assert schema["fileMatch"] == ["task.json"]
    shipped = "/".join(SHIPPED.parts[-3:])  # the file the package ships, wherever installed
    assert shipped == "endstate_author/data/task.schema.json" and SHIPPED.is_file()
    assert schema["url"].startswith("file:///") and schema["url"].endswith(shipped)
    assert "task.json" in data["file_types"]["JSON"]
