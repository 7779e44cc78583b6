"""Code lens: the prove status line at the top of task.json."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types as lsp

from endstate_lsp.convert import uri_to_path
from endstate_lsp.documents import MANIFEST
from endstate_lsp.guard import guarded
from endstate_lsp.prove_on_save import PROVE_COMMAND
from endstate_lsp.settings import Settings
from endstate_lsp.state import TaskState

if TYPE_CHECKING:
    from endstate_lsp.server import EndstateServer


def title(settings: Settings, state: TaskState | None) -> str:
    """What the lens says, from the most to the least specific."""
    if state is not None and state.prove is not None:
        return "prove: running…"
    if state is not None and state.proof is not None:
        return state.proof.summary
    if settings.may_prove:
        return "prove: not run yet (save to run)"
    if not settings.trusted:
        return "prove on save is off: the workspace is not trusted"
    return "prove on save is off"


def register(ls: EndstateServer) -> None:
    @ls.feature(lsp.TEXT_DOCUMENT_CODE_LENS)
    @guarded(list)
    def code_lens(ls: EndstateServer, params: lsp.CodeLensParams) -> list[lsp.CodeLens]:
        uri = params.text_document.uri
        path = uri_to_path(uri)
        if path is None or path.name != MANIFEST:
            return []
        zero = lsp.Position(line=0, character=0)
        return [
            lsp.CodeLens(
                range=lsp.Range(start=zero, end=zero),
                command=lsp.Command(
                    title=title(ls.settings, ls.tasks.get(path.parent)),
                    command=PROVE_COMMAND,
                    arguments=[uri],
                ),
            )
        ]
