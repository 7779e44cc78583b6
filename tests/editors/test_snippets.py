"""The Helix and Zed snippets parse, start this package's server, and use only settings the
server reads (with its defaults): neither editor can be installed here, so this is what keeps
the snippets from drifting away from the server."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

from endstate_lsp.settings import SECTION, Settings

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


def test_zed_settings() -> None:
    text = (EDITORS / "zed" / "settings.json").read_text(encoding="utf-8")
    data = json.loads(re.sub(r"^\s*//.*$", "", text, flags=re.M))
    (schema,) = data["lsp"]["json-language-server"]["settings"]["json"]["schemas"]
    assert schema["fileMatch"] == ["task.json"]
    assert schema["url"].startswith("file:///") and schema["url"].endswith(
        "endstate_author/data/task.schema.json"
    )
    assert "task.json" in data["file_types"]["JSON"]
