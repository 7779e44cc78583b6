"""The endstate-author language server's session object, shared by every feature: settings,
open documents, per-task state, and the roles features call across each other (protocols, so
no feature imports another). Why it is built so: docs/architecture.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer

from endstate_author.engine.diagnostics import Diagnostic
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


