"""Session set-up: ``initialize``, ``initialized`` and configuration changes."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from lsprotocol import types as lsp

from endstate_lsp.guard import guarded
from endstate_lsp.settings import SECTION

if TYPE_CHECKING:
    from endstate_lsp.server import EndstateServer

WATCHED = [
    "**/task.json",
    "**/prompt.md",
    "**/oracle.json",
    "**/*.py",
    "**/fixture/**",
    "**/holdout/**",
    "**/solution/**",
    "**/defects/**",
]
"""Files whose change can change a task's findings."""


def apply(ls: EndstateServer, raw: Any) -> None:
    """Merge a settings object, logging one warning per value that was ignored."""
    for problem in ls.settings.update(raw):
        ls.log(f"setting ignored: {problem}", lsp.MessageType.Warning)


async def pull_configuration(ls: EndstateServer) -> None:
    """Ask the client for the ``endstate-author`` section, when it can answer."""
    caps = ls.client_capabilities.workspace
    if not (caps and caps.configuration):
        return
    try:
        values = await asyncio.wait_for(
            ls.workspace_configuration_async(
                lsp.ConfigurationParams(items=[lsp.ConfigurationItem(section=SECTION)])
            ),
            5,
        )
    except Exception as exc:
        ls.log(f"workspace/configuration failed: {exc}", lsp.MessageType.Warning)
        return
    if values:
        apply(ls, values[0])


async def watch_files(ls: EndstateServer) -> None:
    """Register for watched-file notifications when the client supports registering them."""
    caps = ls.client_capabilities.workspace
    watched = caps.did_change_watched_files if caps else None
    if watched is None or not watched.dynamic_registration:
        return
    options = lsp.DidChangeWatchedFilesRegistrationOptions(
        watchers=[lsp.FileSystemWatcher(glob_pattern=g) for g in WATCHED]
    )
    await ls.client_register_capability_async(
        lsp.RegistrationParams(
            registrations=[
                lsp.Registration(
                    id="endstate-author-watch",
                    method=lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                    register_options=options,
                )
            ]
        )
    )
    ls.tasks.watching = True


def register(ls: EndstateServer) -> None:
    @ls.feature(lsp.INITIALIZE)
    @guarded()
    def initialize(ls: EndstateServer, params: lsp.InitializeParams) -> None:
        apply(ls, params.initialization_options)

    @ls.feature(lsp.INITIALIZED)
    @guarded()
    async def initialized(ls: EndstateServer, params: lsp.InitializedParams) -> None:
        await watch_files(ls)
        await pull_configuration(ls)

    @ls.feature(lsp.WORKSPACE_DID_CHANGE_CONFIGURATION)
    @guarded()
    async def did_change_configuration(
        ls: EndstateServer, params: lsp.DidChangeConfigurationParams
    ) -> None:
        if isinstance(params.settings, dict) and params.settings:
            # pushed values are applied without logging (a bad one keeps its old value)
            ls.settings.update(params.settings)
        else:
            await pull_configuration(ls)
        for root in ls.diagnostics.open_roots():
            ls.diagnostics.relint_root(root)
