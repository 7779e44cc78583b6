"""One sandbox decision (issue 43, item 4): every command's ``--sandbox``, the library's
``ProveOptions``, the language server's setting and the editors' manifests (VS Code, Neovim,
Helix, the pre-commit hooks) offer the choices of
:class:`~endstate_harness.sandbox.choice.SandboxKind` with its
:data:`~endstate_harness.sandbox.choice.DEFAULT_KIND`; none holds a default of its own.

The manifests cannot be generated at install time (an editor reads them from its own
extension folder), so they are read here, as files, and held to the choice module."""

from __future__ import annotations

import inspect
import json
import re
import tomllib
from pathlib import Path

import pytest

from endstate_author import __version__
from endstate_author.cli import cmd_eval, cmd_hook, cmd_prove, cmd_redteam
from endstate_author.prove.model import ProveOptions
from endstate_harness.sandbox.choice import DEFAULT_KIND, SandboxKind, resolve_sandbox
from endstate_lsp.settings import SANDBOXES, SECTION, Settings

ROOT = Path(__file__).resolve().parents[2]
EDITORS = ROOT / "editors"
KINDS = [kind.value for kind in SandboxKind]


def _text(*parts: str) -> str:
    return ROOT.joinpath(*parts).read_text(encoding="utf-8")


def test_the_language_server_offers_the_one_choice() -> None:
    assert list(SANDBOXES) == KINDS
    assert Settings().sandbox == DEFAULT_KIND


def test_the_vscode_manifest_and_its_logic_offer_the_one_choice() -> None:
    props = json.loads(_text("editors", "vscode", "package.json"))["contributes"][
        "configuration"]["properties"][f"{SECTION}.sandbox"]
    assert props["default"] == DEFAULT_KIND.value
    assert props["enum"] == KINDS
    assert len(props["enumDescriptions"]) == len(KINDS)
    logic = _text("editors", "vscode", "src", "logic.ts")
    union = re.search(r"export type Sandbox = ([^;]+);", logic)
    listed = re.search(r"export const SANDBOXES: readonly Sandbox\[\] = \[([^\]]*)\];", logic)
    default = re.search(r"const DEFAULTS: ServerSettings = \{[^}]*sandbox: \"(\w+)\"", logic)
    assert union and listed and default, "logic.ts no longer reads as this test expects"
    assert re.findall(r'"(\w+)"', union.group(1)) == KINDS
    assert re.findall(r'"(\w+)"', listed.group(1)) == KINDS
    assert default.group(1) == DEFAULT_KIND.value
    said = ", ".join(f'"{kind}"' for kind in KINDS[:-1]) + f' or "{KINDS[-1]}"'
    assert f"endstate-author.sandbox must be {said}" in logic


def test_the_neovim_and_helix_configurations_default_to_the_one_choice() -> None:
    lua = _text("editors", "nvim", "lua", "endstate_author", "init.lua")
    said = re.findall(r"sandbox = \"(\w+)\"", lua)
    assert said and set(said) == {DEFAULT_KIND.value}, said
    helix = tomllib.loads(_text("editors", "helix", "languages.toml"))
    assert helix["language-server"]["endstate-author"]["config"][SECTION]["sandbox"] == (
        DEFAULT_KIND.value)


def test_the_pre_commit_hooks_say_the_one_default() -> None:
    hooks = _text(".pre-commit-hooks.yaml")
    assert f"--sandbox {'|'.join(KINDS)}" in hooks
    assert f"{DEFAULT_KIND.value} is the default" in hooks


@pytest.mark.parametrize("command", [cmd_prove.prove_tasks_command, cmd_eval.eval_command,
                                     cmd_redteam.redteam_command, cmd_hook.hook_command])
def test_every_command_defaults_to_the_one_choice(command: object) -> None:
    parameter = inspect.signature(command).parameters["sandbox"]  # type: ignore[arg-type]
    assert parameter.default is DEFAULT_KIND


def test_the_librarys_default_is_the_one_decision() -> None:
    """``ProveOptions()`` grades where the CLI's ``prove`` would with no ``--sandbox``: the
    one decision (``auto``), not a default of its own (it once was the local sandbox)."""
    decided = resolve_sandbox(DEFAULT_KIND, version=__version__)
    options = ProveOptions()
    assert options.sandbox.grading
    assert (options.sandbox.kind, options.sandbox.image, options.sandbox.reason) == (
        decided.kind, decided.image, decided.reason)
    if decided.kind == "local":
        print("note: no Docker run can start here, so auto is the local sandbox either way")
