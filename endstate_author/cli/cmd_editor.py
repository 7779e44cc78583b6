"""``endstate-author editor path [NAME]``: where the editor files of this installation are.

An installed wheel carries them under ``endstate_author/data/editors/`` (see hatch_build.py);
a development install reads the checkout's ``editors/`` folder.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from endstate_author.cli.output import fail

PACKAGE = Path(__file__).resolve().parents[1]
SHIPPED = PACKAGE / "data" / "editors"
CHECKOUT = PACKAGE.parent / "editors"

app = typer.Typer(
    name="editor",
    help="Where the editor files (Neovim, Helix, Zed, VS Code) of this installation are.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


class Editor(StrEnum):
    nvim = "nvim"
    helix = "helix"
    zed = "zed"
    vscode = "vscode"


WHAT = {
    Editor.nvim: "put this folder on the runtimepath; require(\"endstate_author\").setup()",
    Editor.helix: "merge languages.toml into ~/.config/helix/languages.toml",
    Editor.zed: "merge settings.json into ~/.config/zed/settings.json",
    Editor.vscode: "",  # what to do depends on whether a packaged extension is there
}


def vscode_hint(folder: Path) -> str:
    """How to install the VS Code extension from ``folder``: the packaged ``.vsix`` when
    this installation carries one (a wheel built after the extension was), else how to
    build it there: never a file that does not exist."""
    built = sorted((folder / "dist").glob("*.vsix"))
    if built:
        return f"code --install-extension {built[-1]}"
    return ("no packaged extension in this installation: build it in this folder with "
            "`npm ci && npm run package` (Node.js 20 or later), then "
            "`code --install-extension dist/*.vsix`")


def editors_root() -> Path | None:
    """The folder holding one folder per editor: the wheel's, else the checkout's."""
    for root in (SHIPPED, CHECKOUT):
        if (root / Editor.nvim.value).is_dir():
            return root
    return None


def editor_folder(editor: Editor) -> Path | None:
    root = editors_root()
    folder = root / editor.value if root is not None else None
    return folder if folder is not None and folder.is_dir() else None


@app.command("path")
def path_command(
    name: Annotated[
        Editor | None, typer.Argument(help="nvim, helix, zed or vscode; all of them if left out.")
    ] = None,
) -> None:
    """Print the folder of an editor's files (all of them, each with what to do, without NAME)."""
    if name is not None:
        folder = editor_folder(name)
        if folder is None:
            raise fail(f"this installation carries no {name.value} files (looked in {SHIPPED})")
        typer.echo(str(folder))
        if name is Editor.vscode:
            typer.echo(vscode_hint(folder), err=True)
        return
    root = editors_root()
    if root is None:
        raise fail(f"this installation carries no editor files (looked in {SHIPPED})")
    for editor in Editor:
        folder = editor_folder(editor)
        if folder is not None:
            what = vscode_hint(folder) if editor is Editor.vscode else WHAT[editor]
            typer.echo(f"{editor.value:<7} {folder}\n        {what}")
