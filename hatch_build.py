"""Hatch build hook: the wheel carries the editor files under ``endstate_author/data/editors/``
and the mutation report's web component under ``endstate_author/data/web/``.

``endstate-author editor path NAME`` finds the editor files there in an installed wheel (and in
the checkout's ``editors/`` folder in a development install, where this hook does not run).
``prove --mutation-report`` finds the component there: fetched with npm at build time
(``scripts/web_assets.py``: the pinned version, its integrity checked), never kept in the
repository. A build without npm or its registry fails saying so, unless
``ENDSTATE_AUTHOR_NO_WEB_ASSETS=1`` asks for a wheel without the HTML view.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
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


WEB_DEST = "endstate_author/data/web"


def _web_assets_module(root: Path) -> ModuleType:
    """``scripts/web_assets.py``, loaded by path (nothing is installed while building)."""
    spec = importlib.util.spec_from_file_location("web_assets", root / "scripts" / "web_assets.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def web_files(root: Path) -> Iterator[tuple[Path, str]]:
    """(source file, path in the wheel) for the web component: the checkout's copy
    (``make web-assets``) when it has one, else fetched into ``build/web-assets``."""
    if os.environ.get("ENDSTATE_AUTHOR_NO_WEB_ASSETS") == "1":
        return
    assets = _web_assets_module(root)
    local = root / WEB_DEST
    names = [name for _, name in assets.ELEMENTS.files]
    folder = local if all((local / n).is_file() for n in names) else root / "build" / "web-assets"
    try:
        paths = assets.fetch(assets.ELEMENTS, folder)
    except assets.FetchError as exc:
        raise RuntimeError(
            f"the wheel ships prove's mutation report view, whose web component is fetched "
            f"with npm at build time: {exc} (ENDSTATE_AUTHOR_NO_WEB_ASSETS=1 builds without it)"
        ) from exc
    for path in paths:
        yield path, f"{WEB_DEST}/{path.name}"


class EditorFilesHook(BuildHookInterface):  # type: ignore[type-arg]
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name != "wheel" or version == "editable":
            return
        for source, dest in editor_files(Path(self.root), self.metadata.version):
            build_data["force_include"][str(source)] = dest
        for source, dest in web_files(Path(self.root)):
            build_data["force_include"][str(source)] = dest
