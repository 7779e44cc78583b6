"""Hatch build hook: the wheel carries the editor files under ``endstate_author/data/editors/``.

``endstate-author editor path NAME`` finds them there in an installed wheel (and in the
checkout's ``editors/`` folder in a development install, where this hook does not run).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

DEST = "endstate_author/data/editors"
WHOLE = ("nvim", "helix", "zed")
"""Editors whose folder ships as it is."""
VSCODE_SOURCES = ("package.json", "package-lock.json", "tsconfig.json", "README.md",
                  "LICENSE.md", ".vscodeignore", "src", "test", "tools")
"""What ``npm ci && npx vsce package`` needs to build the extension (never node_modules)."""


def _files(folder: Path) -> Iterator[Path]:
    """Every file under ``folder`` (none when it is missing: a partial source tree)."""
    for path in sorted(folder.rglob("*")) if folder.is_dir() else []:
        if path.is_file() and "__pycache__" not in path.parts:
            yield path


def editor_files(root: Path, version: str) -> Iterator[tuple[Path, str]]:
    """(source file, path in the wheel) for every editor file the wheel carries."""
    editors = root / "editors"
    for name in WHOLE:
        for path in _files(editors / name):
            yield path, f"{DEST}/{path.relative_to(editors).as_posix()}"
    vscode = editors / "vscode"
    for entry in VSCODE_SOURCES:
        source = vscode / entry
        for path in _files(source) if source.is_dir() else [source] * source.is_file():
            yield path, f"{DEST}/{path.relative_to(editors).as_posix()}"
    built = vscode / "dist" / f"endstate-author-{version}.vsix"
    if built.is_file():  # the extension as `code --install-extension` takes it, when built
        yield built, f"{DEST}/vscode/dist/{built.name}"


class EditorFilesHook(BuildHookInterface):  # type: ignore[type-arg]
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name != "wheel" or version == "editable":
            return
        for source, dest in editor_files(Path(self.root), self.metadata.version):
            build_data["force_include"][str(source)] = dest
