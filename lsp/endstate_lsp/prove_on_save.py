"""Prove on save: run ``endstate-author prove`` for a saved task in a child process, show its
progress, and merge its findings into the task's diagnostics — incrementally.

Registers ``textDocument/didSave``, ``workspace/executeCommand`` for :data:`PROVE_COMMAND`
and ``shutdown`` (which stops every run).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import json
import os
import shlex
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types as lsp

from endstate_author.assist import task_root_of
from endstate_author.engine.diagnostics import Diagnostic
from endstate_author.engine.textsafe import one_line
from endstate_author.selfrun import child_env, python_module
from endstate_lsp.convert import uri_to_path
from endstate_lsp.guard import guarded
from endstate_lsp.prove_report import place_findings, read_prove
from endstate_lsp.state import ProveResult, ProveRun

if TYPE_CHECKING:
    from endstate_lsp.server import EndstateServer

PROVE_CMD_ENV = "ENDSTATE_LSP_PROVE_CMD"
"""A shell-style command line replacing ``python -m endstate_author prove`` (tests, wrappers)."""
PROVE_COMMAND = "endstate-author.prove"
"""The command of the code lens: prove the task now."""

STOP_GRACE_S = 10.0
"""How long a cancelled prove gets to stop its checks and remove their sandboxes (Docker
containers take seconds on a loaded machine) before its process group is killed."""

__all__ = ["PROVE_CMD_ENV", "PROVE_COMMAND", "ProveOnSave", "place_findings", "read_prove"]


class ProveOnSave:
    """Starts, cancels and reads prove runs, at most one per task root."""

    def __init__(self, ls: EndstateServer) -> None:
        self.ls = ls
        self.count = 0
        self.sandboxes: dict[str, Any] = {}
        """The sandbox prove chose per setting, as it said (read by endstate_author): the
        cached results of a save are looked up under it."""

    def base(self) -> list[str]:
        custom = os.environ.get(PROVE_CMD_ENV)
        # not `python -m` from the suite's folder: its own endstate_author/ would run (selfrun)
        return shlex.split(custom) if custom else python_module("endstate_author", "prove")

    def command(self, root: Path) -> list[str]:
        return [
            *self.base(),
            str(root),
            "--output-format",
            "json",
            "--sandbox",
            self.ls.settings.sandbox,
            "--progress-json",
        ]

    def prove_options(self) -> dict[str, Any]:
        """The options of the command line that change which checks run (``--only``,
        ``--mutants``, ``--strict``), for reading the cache as that command will."""
        words = self.base()
        found: dict[str, Any] = {"only": [], "strict": "--strict" in words}
        for i, word in enumerate(words[:-1]):
            if word == "--only":
                found["only"].append(words[i + 1])
            elif word == "--mutants" and words[i + 1].isdigit():
                found["mutants"] = int(words[i + 1])
        return found

    def current(self, root: Path, run: ProveRun) -> bool:
        """``run`` is still the task's run: what it found may be shown."""
        state = self.ls.tasks.get(root)
        return state is not None and state.prove is run and not run.cancelled

    async def start(self, root: Path) -> None:
        """Run prove for ``root``: the cached results at once, then the child process once
        every older run of the task has stopped (a newer save cancels them)."""
        if not self.ls.settings.may_prove:
            return
        state = self.ls.tasks[root]
        old, state.prove = state.prove, None
        self.count += 1
        run = ProveRun(token=f"endstate-prove-{os.getpid()}-{self.count}")
        state.prove = run
        # the last proof was of other files: until the cache says which results still hold,
        # none is shown (no publish now: the cached results follow in milliseconds)
        state.proof = None
        loop = asyncio.get_running_loop()
        run.shower = loop.create_task(self._show_cached(root, run))
        if old is not None:
            state.stopping.append(loop.create_task(self.cancel(old)))
        stopping = list(state.stopping)
        if stopping:  # at most one prove process per task: the older ones go first
            await asyncio.gather(*stopping, return_exceptions=True)
            state.stopping = [t for t in state.stopping if not t.done()]
        if self.current(root, run):  # else a newer save came meanwhile: it starts the run
            run.task = loop.create_task(self._prove(root, run))

    def warm(self) -> None:
        """Import prove's cache reader in the background (a session that may prove will save
        soon, and the import costs more than reading the cache)."""
        if self.ls.settings.may_prove and "endstate_author.assist.proof" not in sys.modules:
            asyncio.get_running_loop().run_in_executor(None, _import_quietly, PROOF_MODULE)

    async def _show_cached(self, root: Path, run: ProveRun) -> None:
        """The results the cache holds for the task as saved, shown before any check runs."""
        try:
            setting = self.ls.settings.sandbox
            known, chosen = await asyncio.to_thread(
                _read_cache, root, self.sandboxes.get(setting), setting, self.prove_options()
            )
            self.sandboxes.setdefault(setting, chosen)  # unless prove said meanwhile
        except Exception as exc:
            known = None
            self.ls.log(f"prove: reading the cache failed: {type(exc).__name__}: {exc}")
        if not self.current(root, run):
            return
        run.static = []
        if known is not None:
            run.order, run.static = known.order, known.static
            for name, result in known.results.items():
                run.results.setdefault(name, result)  # a streamed result is as new or newer
            if known.order:
                self.ls.log(
                    f"prove {root.name}: {len(known.results)} check(s) answered from the cache "
                    f"at the save, {len(known.pending)} to run"
                )
        await self._show(root, run)

    def _arrived(self, root: Path, run: ProveRun, event: Any) -> str | None:
        """An event of prove's ``--progress-json`` (a ``prove.wire.Event``); what to show."""
        if event.kind == "sandbox":
            self.sandboxes[self.ls.settings.sandbox] = event.sandbox
            return None
        if event.kind == "start":
            return f"checking: {event.check}"
        result = event.result
        if event.kind != "done" or result is None:
            return None
        if result.cached:
            run.answered += 1
        else:
            run.ran.append(result.check)
        run.results[result.check] = result
        if run.shower is None or run.shower.done():
            run.shower = asyncio.get_running_loop().create_task(self._show(root, run))
        else:
            run.dirty = True
        total = len(run.order) or len(run.results)
        return f"{len(run.results)}/{total} checks known"

    async def _show(self, root: Path, run: ProveRun) -> None:
        """Show the results known so far (again while more came in meanwhile)."""
        if run.static is None:  # results streamed before the cache was read: it shows them
            return
        run.dirty = True
        while run.dirty and self.current(root, run):
            run.dirty = False
            try:
                diags, count, failed = await asyncio.to_thread(
                    _findings, root, run.known(), run.static
                )
            except Exception as exc:  # prove's report still comes: only this update is lost
                self.ls.log(f"prove: showing results failed: {type(exc).__name__}: {exc}")
                return
            if not self.current(root, run):
                return
            self.ls.tasks[root].proof = ProveResult(
                failed == 0,
                f"prove: {count} checks known, {failed} failed, running…",
                0.0,
                diags,
            )
            self._after(root, lens=False)

    async def cancel(self, run: ProveRun) -> None:
        """Stop ``run``: SIGTERM (prove ends its running checks and removes their sandboxes),
        then, past :data:`STOP_GRACE_S`, SIGKILL for it and every process it started (the
        sandboxes' commands run in sessions of their own) and removal of its containers."""
        run.cancelled = True
        proc = run.process
        if proc is not None and proc.returncode is None:
            kill_group(proc, signal.SIGTERM)
            try:
                await asyncio.wait_for(proc.wait(), STOP_GRACE_S)
            except TimeoutError:
                left = descendants(proc.pid)
                kill_group(proc, signal.SIGKILL)
                for pid in left:
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.killpg(pid, signal.SIGKILL)  # a sandbox command leads its group
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.kill(pid, signal.SIGKILL)
                await proc.wait()
                if self.ls.settings.sandbox != "local":
                    await self._remove_containers(proc.pid)
        if run.task is not None and not run.task.done():
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(run.task, 3)

    async def _remove_containers(self, pid: int) -> None:
        try:
            removed = await asyncio.to_thread(_remove_containers_of, pid)
        except Exception as exc:  # no daemon: a killed local run has no container either
            self.ls.log(f"prove: could not look for containers of {pid}: {exc}")
            return
        if removed:
            self.ls.log(f"prove: removed {removed} container(s) of the killed prove {pid}")

    async def stop_all(self) -> None:
        """The session ends: stop every run."""
        states = self.ls.tasks.all()
        for state in states:
            if state.prove is not None:
                await self.cancel(state.prove)
            await asyncio.gather(*state.stopping, return_exceptions=True)
        for state in states:
            state.prove = None
            state.stopping = []

    async def _progress(self, run: ProveRun, value: Any) -> None:
        with contextlib.suppress(Exception):
            if getattr(value, "message", None):  # it may quote prove's stderr (textsafe)
                value.message = one_line(value.message)
            if isinstance(value, lsp.WorkDoneProgressBegin):
                self.ls.work_done_progress.begin(run.token, value)
            elif isinstance(value, lsp.WorkDoneProgressReport):
                self.ls.work_done_progress.report(run.token, value)
            else:
                self.ls.work_done_progress.end(run.token, value)

    async def _progress_reporter(self, run: ProveRun) -> Callable[[Any], Awaitable[None]]:
        """How to show progress of ``run``: through the client's progress UI when it has one
        (and accepts the token), else not at all."""
        window = self.ls.client_capabilities.window
        progress = bool(window and window.work_done_progress)
        if progress:
            try:
                await asyncio.wait_for(self.ls.work_done_progress.create_async(run.token), 5)
            except Exception:
                progress = False

        async def show(value: Any) -> None:
            if progress:
                await self._progress(run, value)

        return show

    async def _prove(self, root: Path, run: ProveRun) -> None:
        show = await self._progress_reporter(run)
        await show(
            lsp.WorkDoneProgressBegin(
                title=f"prove {root.name}", cancellable=False, message="starting"
            )
        )
        started = time.monotonic()
        if run.cancelled:  # superseded while the client made the progress token
            await show(lsp.WorkDoneProgressEnd(message="cancelled by a newer save"))
            return
        cmd = self.command(root)
        self.ls.log(f"prove: {shlex.join(cmd)}")
        # all of the run's temporary folders under one of ours, removed when it ended: a run
        # killed for a newer save had no chance to remove its own
        scratch = tempfile.mkdtemp(prefix="endstate-lsp-run-")
        try:
            await self._run_prove(root, run, cmd, scratch, show, started)
        finally:
            await asyncio.to_thread(shutil.rmtree, scratch, True)

    async def _run_prove(self, root: Path, run: ProveRun, cmd: list[str], scratch: str,
                         show: Callable[[Any], Awaitable[None]], started: float) -> None:
        try:
            proc = await asyncio.create_subprocess_exec(
                *cmd,
                cwd=str(root.parent),
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                start_new_session=True,
                env=child_env(TMPDIR=scratch),
            )
        except OSError as exc:
            if self.current(root, run):
                state = self.ls.tasks[root]
                state.prove = None
                state.proof = ProveResult(False, f"prove could not start: {exc}", 0.0)
                self._after(root, now=True)  # before the end, as for a report (see below)
            await show(lsp.WorkDoneProgressEnd(message=f"prove could not start: {exc}"))
            return
        run.process = proc
        self.ls.log(f"prove: started, pid {proc.pid}")
        if run.cancelled:
            kill_group(proc, signal.SIGTERM)

        said: list[str] = []  # what prove said besides progress (a missing image, say)
        refused: list[str] = []  # events of a wire version this server cannot read

        async def read_stderr() -> None:
            assert proc.stderr is not None
            while line := await proc.stderr.readline():
                text = line.decode("utf-8", errors="replace").strip()
                if not text:
                    continue
                if text.startswith("{"):  # an event: read off the event loop, in order
                    try:
                        event = await asyncio.to_thread(_read_event, text)
                    except Exception as exc:  # a newer prove's wire version: said once
                        if not refused:
                            self.ls.log(f"prove: {type(exc).__name__}: {exc}")
                        refused.append(text)
                        continue
                    if event is not None:
                        current = self.current(root, run)
                        message = self._arrived(root, run, event) if current else None
                        if message:
                            await show(lsp.WorkDoneProgressReport(message=message[:200]))
                        continue
                if not text.startswith("checking: "):
                    said.append(text)
                await show(lsp.WorkDoneProgressReport(message=text[:200]))

        try:
            stderr_task = asyncio.get_running_loop().create_task(read_stderr())
            assert proc.stdout is not None
            out = await proc.stdout.read()
            await proc.wait()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(stderr_task, 2)
        finally:
            if proc.returncode is None:
                kill_group(proc, signal.SIGKILL)
        seconds = time.monotonic() - started
        if run.cancelled:
            await show(lsp.WorkDoneProgressEnd(message="cancelled by a newer save"))
            return
        result = await asyncio.to_thread(  # off the event loop: read by prove's wire module
            read_prove, out, proc.returncode, seconds, root.parent, " ".join(said)
        )
        state = self.ls.tasks[root]
        if state.prove is not run:
            await show(lsp.WorkDoneProgressEnd(message="superseded by a newer save"))
            return
        state.prove = None  # the report is the answer: results still being shown are not
        state.proof = result
        self.ls.log(
            f"prove {root.name}: {len(run.ran)} check(s) ran, {run.answered} answered from the "
            f"cache: {json.dumps(run.ran)}"
        )
        # the report's findings are published before the progress ends: a client (or a test)
        # that sees the end sees the final diagnostics already, never an older run's after it
        self._after(root, now=True)
        await show(lsp.WorkDoneProgressEnd(message=result.summary))

    def _after(self, root: Path, lens: bool = True, now: bool = False) -> None:
        """A result is in: lint again (it merges the findings) and refresh the code lens
        (not while a run streams: the lens says "running" until its report). ``now``
        publishes before returning instead of on the event loop's next turn."""
        self.ls.diagnostics.relint_root(root, delay_ms=0, now=now)
        caps = self.ls.client_capabilities.workspace
        if lens and caps and caps.code_lens and caps.code_lens.refresh_support:
            with contextlib.suppress(Exception):
                self.ls.workspace_code_lens_refresh(None)


PROOF_MODULE = "endstate_author.assist.proof"


def _import_quietly(name: str) -> None:
    """(In a worker thread.) Import ``name`` ahead of need; a failure shows when it is used."""
    with contextlib.suppress(Exception):
        importlib.import_module(name)


def _read_cache(root: Path, sandbox: Any, setting: str, options: dict[str, Any]) -> Any:
    """(In a worker thread.) What the cache knows of ``root`` as saved (a ``KnownProof``, None
    when the task does not load), and the sandbox looked up: ``sandbox``, what prove last
    said it chose, else what the one sandbox choice decides for ``setting``."""
    # prove's package (~0.1-0.5 s to import) is loaded by the first save, in this worker
    # thread, never at server start nor on the event loop: deferred
    from endstate_author.assist import proof

    if sandbox is None:
        sandbox = proof.decided_sandbox(setting)
    try:
        return proof.cached_proof(root, sandbox, **options), sandbox
    except SystemError:  # CPython < 3.11.8: ast.parse racing the event loop's lint (gh-106905)
        return proof.cached_proof(root, sandbox, **options), sandbox


def _findings(
    root: Path, known: list[Any], static: list[Diagnostic]
) -> tuple[list[Diagnostic], int, int]:
    """(In a worker thread.) The findings of the results known so far, how many results
    count and how many failed."""
    # deferred: as in _read_cache
    from endstate_author.assist import proof

    failed = sum(r.outcome == "fail" for r in known)
    return proof.findings(root, known, static), len(known), failed


def _read_event(line: str) -> Any:
    """(In a worker thread.) A line prove printed on stderr as its event (None: no event)."""
    # deferred: as in _read_cache
    from endstate_author.assist import proof

    return proof.read_event(line)


def _remove_containers_of(pid: int) -> int:
    """(In a worker thread.) The containers a killed prove left, removed."""
    # deferred: as in _read_cache
    from endstate_author.assist import proof

    return proof.remove_containers_of(pid)


def descendants(pid: int) -> list[int]:
    """Every live process below ``pid`` (read from /proc; empty where there is none)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir() if Path("/proc").is_dir() else []:
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            parent = int(stat.rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(parent, []).append(int(entry.name))
    found: list[int] = []
    todo = list(children.get(pid, []))
    while todo:
        child = todo.pop()
        found.append(child)
        todo.extend(children.get(child, []))
    return found


def kill_group(proc: asyncio.subprocess.Process, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, sig)


def register(ls: EndstateServer) -> None:
    """Save → prove; the code lens's command; stop every run on shutdown."""

    @ls.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
    @guarded()
    async def did_save(ls: EndstateServer, params: lsp.DidSaveTextDocumentParams) -> None:
        path = uri_to_path(params.text_document.uri)
        root = task_root_of(path) if path is not None else None
        if root is not None:
            ls.tasks.forget_files(root)
            await ls.prover.start(root)

    @ls.command(PROVE_COMMAND)
    async def prove_command(ls: EndstateServer, *args: Any) -> None:
        try:
            uri = args[0] if args and isinstance(args[0], str) else None
            if uri is None and args and isinstance(args[0], list) and args[0]:
                uri = args[0][0]
            path = uri_to_path(str(uri)) if uri else None
            if path is None:
                return
            if not ls.settings.may_prove:
                ls.window_show_message(
                    lsp.ShowMessageParams(
                        type=lsp.MessageType.Warning,
                        message="prove runs suite code: mark the workspace trusted (setting "
                        "endstate-author.trusted) and keep proveOnSave on to run it",
                    )
                )
                return
            await ls.prover.start(path.parent)
        except Exception as exc:
            ls.log(f"prove command failed: {exc}", lsp.MessageType.Error)

    @ls.feature(lsp.SHUTDOWN)
    @guarded()
    async def shutdown(ls: EndstateServer, params: Any) -> None:
        await ls.prover.stop_all()
