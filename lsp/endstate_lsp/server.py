"""The endstate-author language server's session object, shared by every feature.

Every answer (findings, completion, hover, fixes, links, outline) comes from
``endstate_author`` — the same code the CLI runs — through ``endstate_author.assist``; the
protocol side lives in one module per feature (:mod:`endstate_lsp.features`), prove on save
in :mod:`endstate_lsp.prove_on_save`, and :mod:`endstate_lsp.app` wires them onto one
:class:`EndstateServer`. This module holds only what they share: the settings, the open
documents, the per-task state, and the two roles that features call across each other
(:class:`Linting`, :class:`Proving`), typed as protocols so that no feature imports another.

Safety: a suite opened in an editor is untrusted input. Lint reads graders' source without
importing it; prove (which imports and runs suite code) starts only when the client says the
workspace is ``trusted`` *and* ``proveOnSave`` is on. Every handler is guarded
(:mod:`endstate_lsp.guard`): a failure becomes a log message and an empty answer, never a
dead server.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer

from endstate_author.diagnostics import Diagnostic
from endstate_lsp import __version__, guard
from endstate_lsp.documents import Documents
from endstate_lsp.settings import Settings
from endstate_lsp.state import TaskStates


class Linting(Protocol):
    """Lint as you type (:class:`endstate_lsp.features.diagnostics.Diagnostics`)."""

    @property
    def pull_mode(self) -> bool: ...

    def lint(self, uri: str) -> dict[str, list[lsp.Diagnostic]]: ...

    def findings(self, uri: str) -> list[Diagnostic]: ...

    def schedule(self, uri: str, version: int | None, delay_ms: int | None = None) -> None: ...

    def relint_root(self, root: Path, delay_ms: int | None = None, now: bool = False) -> None:
        ...

    def open_roots(self) -> list[Path]: ...

    def close(self, uri: str) -> None: ...


class Proving(Protocol):
    """Prove on save (:class:`endstate_lsp.prove_on_save.ProveOnSave`)."""

    async def start(self, root: Path) -> None: ...

    def warm(self) -> None: ...

    async def stop_all(self) -> None: ...


class EndstateServer(LanguageServer):
    """One editor session: its settings, documents, per-task state, lints and prove runs."""

    def __init__(self) -> None:
        super().__init__("endstate-author", __version__)
        self.settings = Settings()
        self.tasks = TaskStates()
        self.documents = Documents(self)
        self.diagnostics: Linting
        """Set by :func:`endstate_lsp.app.create_server`."""
        self.prover: Proving
        """Set by :func:`endstate_lsp.app.create_server`."""

    def log(self, message: str, kind: lsp.MessageType = lsp.MessageType.Log) -> None:
        guard.log(self, message, kind)


