"""The endstate-author language server: protocol handling only.

Every answer (findings, completion, hover, fixes, links, outline) comes from
``endstate_author`` — the same code the CLI runs — through ``endstate_author.editor``; this
module converts byte offsets to LSP's UTF-16 positions, debounces, tracks versions, and runs
prove on save in a separate process.

Safety: a suite opened in an editor is untrusted input. Lint reads graders' source without
importing it; prove (which imports and runs suite code) starts only when the client says the
workspace is ``trusted`` *and* ``proveOnSave`` is on. Every handler is guarded: a failure
becomes a log message and an empty answer, never a dead server.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import json
import os
import shlex
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlparse

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer

if TYPE_CHECKING:
    from endstate_author.diagnostics import Diagnostic, Severity
    from endstate_author.editor import Action, Graders

SECTION = "endstate-author"
PROVE_CMD_ENV = "ENDSTATE_LSP_PROVE_CMD"
"""A shell-style command line replacing ``python -m endstate_author prove`` (tests, wrappers)."""
PROVE_COMMAND = "endstate-author.prove"
MAX_BYTES = 1 << 20
SANDBOXES = ("docker", "local", "auto")
STALE_S = 2.0
"""Without watched-file notifications, cached listings and graders expire after this long."""


@dataclass
class Settings:
    """The client's settings (initializationOptions, then workspace/configuration)."""

    trusted: bool = False
    prove_on_save: bool = True
    debounce_ms: int = 150
    sandbox: str = "auto"

    def update(self, raw: Any) -> list[str]:
        """Merge a settings object; returns complaints about values that were ignored."""
        if not isinstance(raw, dict):
            return []
        if isinstance(raw.get(SECTION), dict):
            raw = raw[SECTION]
        problems = []
        if "trusted" in raw:
            if isinstance(raw["trusted"], bool):
                self.trusted = raw["trusted"]
            else:
                problems.append("trusted must be true or false")
        if "proveOnSave" in raw:
            if isinstance(raw["proveOnSave"], bool):
                self.prove_on_save = raw["proveOnSave"]
            else:
                problems.append("proveOnSave must be true or false")
        if "debounceMs" in raw:
            value = raw["debounceMs"]
            if (
                isinstance(value, int | float)
                and not isinstance(value, bool)
                and 0 <= value <= 10000
            ):
                self.debounce_ms = int(value)
            else:
                problems.append("debounceMs must be a number of milliseconds between 0 and 10000")
        if "sandbox" in raw:
            if raw["sandbox"] in SANDBOXES:
                self.sandbox = raw["sandbox"]
            else:
                problems.append('sandbox must be "docker", "local" or "auto"')
        return problems

    @property
    def may_prove(self) -> bool:
        return self.trusted and self.prove_on_save


@dataclass
class ProveResult:
    ok: bool
    summary: str
    seconds: float
    diagnostics: list[Diagnostic] = field(default_factory=list)


@dataclass
class ProveRun:
    token: str
    process: asyncio.subprocess.Process | None = None
    task: asyncio.Task[None] | None = None
    cancelled: bool = False


def uri_to_path(uri: str) -> Path | None:
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return None
    return Path(unquote(parsed.path))


def path_to_uri(path: Path) -> str:
    return path.absolute().as_uri()


class EndstateServer(LanguageServer):
    """State of one editor session: settings, pending lints, prove runs, published URIs."""

    def __init__(self) -> None:
        from endstate_lsp import __version__

        super().__init__("endstate-author", __version__)
        self.settings = Settings()
        self.pending: dict[str, asyncio.Task[None]] = {}
        self.published: dict[Path, set[str]] = {}
        self.last: dict[str, list[Diagnostic]] = {}
        self.proves: dict[Path, ProveRun] = {}
        self.results: dict[Path, ProveResult] = {}
        self.graders_cache: dict[Path, tuple[float, Graders]] = {}
        self.prove_count = 0
        self.trees: dict[Path, tuple[float, dict[str, Any]]] = {}
        self.watching = False
        self.configs: dict[Path, Any] = {}

    # ----- helpers ---------------------------------------------------------------------------

    def log(self, message: str, kind: lsp.MessageType = lsp.MessageType.Log) -> None:
        with contextlib.suppress(Exception):
            self.window_log_message(lsp.LogMessageParams(type=kind, message=message))

    @property
    def pull_mode(self) -> bool:
        caps = self.client_capabilities.text_document
        return caps is not None and caps.diagnostic is not None

    def document_bytes(self, uri: str) -> bytes | None:
        with contextlib.suppress(Exception):
            doc = self.workspace.get_text_document(uri)
            return doc.source.encode("utf-8", errors="surrogatepass")
        return None

    def graders_for(self, root: Path) -> Graders:
        from endstate_author.editor import Graders

        cached = self.graders_cache.get(root)
        now = time.monotonic()
        if cached is not None and (self.watching or now - cached[0] < STALE_S):
            return cached[1]
        graders = Graders.for_task(root, root.parent, _config(root))
        self.graders_cache[root] = (now, graders)
        return graders

    def file_text(self, path: Path) -> bytes:
        data = self.document_bytes(path_to_uri(path))
        if data is not None:
            return data
        try:
            if path.is_file() and path.stat().st_size <= MAX_BYTES:
                return path.read_bytes()
        except OSError:
            pass
        return b""

    def lint_buffer(self, root: Path, data: bytes) -> list[Diagnostic]:
        """Lint an unsaved buffer, reusing what does not change between keystrokes.

        The directory listings and the grader catalogue of a task only change when files
        change on disk, which the watched-files handler reports (it drops these caches), so
        a keystroke re-reads only the buffer.
        """
        from endstate_author.context import TaskContext
        from endstate_author.diagnostics import Diagnostic as _Diag
        from endstate_author.lint import run_rules

        config = self.configs.get(root)
        if config is None:
            config = self.configs[root] = _config(root)
        catalogue = self.graders_for(root).catalogue
        ctx = TaskContext(
            root, suite_root=root.parent, config=config, text=data, catalogue=catalogue
        )
        stamp, trees = self.trees.get(root, (0.0, {}))
        now = time.monotonic()
        if not self.watching and now - stamp > STALE_S:
            stamp, trees = now, {}
        self.trees[root] = (stamp, trees)
        ctx.__dict__["_trees"] = trees  # shared listing cache (cached_property slot)
        return sorted(run_rules(ctx, config), key=_Diag.sort_key)

    def forget(self, root: Path) -> None:
        """Files of ``root`` changed on disk: drop its cached listings, config and graders."""
        self.trees.pop(root, None)
        self.configs.pop(root, None)
        self.graders_cache.pop(root, None)

    # ----- diagnostics -----------------------------------------------------------------------

    def lint(self, uri: str) -> dict[str, list[lsp.Diagnostic]]:
        """Lint the task of ``uri`` (its buffer text): LSP diagnostics grouped by file URI."""
        from endstate_author.diagnostics import Diagnostic as _Diag

        path = uri_to_path(uri)
        data = self.document_bytes(uri)
        if path is None or data is None:
            return {}
        root = path.parent
        if len(data) > MAX_BYTES:
            big = _Diag(
                "ES001",
                "error",
                f"task.json is {len(data) / 1048576:.1f} MiB; a manifest "
                "over 1 MiB is not analysed",
                path,
            )
            return {uri: [_to_lsp(big, data)]}
        found = self.lint_buffer(root, data)
        result = self.results.get(root)
        if result is not None:
            found = found + [_place(d, data) for d in result.diagnostics]
        self.last[uri] = found
        grouped: dict[str, list[lsp.Diagnostic]] = {uri: []}
        for diag in found:
            if diag.file.name == path.name and diag.file.parent.resolve() == root.resolve():
                grouped[uri].append(_to_lsp(diag, data))
            else:
                other = path_to_uri(diag.file)
                grouped.setdefault(other, []).append(_to_lsp(diag, self.file_text(diag.file)))
        return grouped

    def publish(self, uri: str, version: int | None) -> None:
        grouped = self.lint(uri)
        path = uri_to_path(uri)
        if path is None:
            return
        root = path.parent
        mine = grouped.pop(uri, [])
        if not self.pull_mode:
            self.text_document_publish_diagnostics(
                lsp.PublishDiagnosticsParams(uri=uri, diagnostics=mine, version=version)
            )
        before = self.published.get(root, set())
        for other, diags in grouped.items():
            self.text_document_publish_diagnostics(
                lsp.PublishDiagnosticsParams(uri=other, diagnostics=diags)
            )
        for gone in before - set(grouped):
            self.text_document_publish_diagnostics(
                lsp.PublishDiagnosticsParams(uri=gone, diagnostics=[])
            )
        self.published[root] = set(grouped)

    def schedule(self, uri: str, version: int | None, delay_ms: int | None = None) -> None:
        """Lint ``uri`` after the debounce delay; a newer change cancels the wait."""
        old = self.pending.pop(uri, None)
        if old is not None:
            old.cancel()
        delay = self.settings.debounce_ms if delay_ms is None else delay_ms

        async def run() -> None:
            try:
                if delay > 0:
                    await asyncio.sleep(delay / 1000)
                self.publish(uri, version)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                self.log(
                    f"lint failed for {uri}: {type(exc).__name__}: {exc}", lsp.MessageType.Error
                )
            finally:
                if self.pending.get(uri) is task:
                    del self.pending[uri]

        task = asyncio.get_running_loop().create_task(run())
        self.pending[uri] = task

    def relint_root(self, root: Path) -> None:
        for doc_uri in list(self.workspace.text_documents):
            path = uri_to_path(doc_uri)
            if path is not None and path.name == "task.json" and path.parent == root:
                doc = self.workspace.get_text_document(doc_uri)
                self.schedule(doc_uri, doc.version)
        if self.pull_mode:
            refresh = self.client_capabilities.workspace
            if refresh and refresh.diagnostics and refresh.diagnostics.refresh_support:
                self.workspace_diagnostic_refresh(None)

    def open_roots(self) -> list[Path]:
        roots = []
        for doc_uri in list(self.workspace.text_documents):
            path = uri_to_path(doc_uri)
            if path is not None and path.name == "task.json":
                roots.append(path.parent)
        return roots

    # ----- prove on save ---------------------------------------------------------------------

    def prove_command(self, root: Path) -> list[str]:
        custom = os.environ.get(PROVE_CMD_ENV)
        base = shlex.split(custom) if custom else [sys.executable, "-m", "endstate_author", "prove"]
        return [
            *base, str(root), "--output-format", "json", "--sandbox", self.settings.sandbox,
            "--progress-lines",
        ]

    async def start_prove(self, root: Path) -> None:
        """Run prove for ``root``; a run already going for it is cancelled first."""
        if not self.settings.may_prove:
            return
        old = self.proves.pop(root, None)
        if old is not None:
            await self.cancel_prove(old)
        self.prove_count += 1
        run = ProveRun(token=f"endstate-prove-{os.getpid()}-{self.prove_count}")
        self.proves[root] = run
        run.task = asyncio.get_running_loop().create_task(self._prove(root, run))

    async def cancel_prove(self, run: ProveRun) -> None:
        run.cancelled = True
        proc = run.process
        if proc is not None and proc.returncode is None:
            _kill_group(proc, signal.SIGTERM)
            try:
                await asyncio.wait_for(proc.wait(), 3)
            except TimeoutError:
                _kill_group(proc, signal.SIGKILL)
                await proc.wait()
        if run.task is not None and not run.task.done():
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(run.task, 3)

    async def _progress(self, run: ProveRun, value: Any) -> None:
        with contextlib.suppress(Exception):
            if isinstance(value, lsp.WorkDoneProgressBegin):
                self.work_done_progress.begin(run.token, value)
            elif isinstance(value, lsp.WorkDoneProgressReport):
                self.work_done_progress.report(run.token, value)
            else:
                self.work_done_progress.end(run.token, value)

    async def _prove(self, root: Path, run: ProveRun) -> None:
        window = self.client_capabilities.window
        progress = bool(window and window.work_done_progress)
        if progress:
            try:
                await asyncio.wait_for(self.work_done_progress.create_async(run.token), 5)
            except Exception:
                progress = False

        async def show(value: Any) -> None:
            if progress:
                await self._progress(run, value)

        await show(
            lsp.WorkDoneProgressBegin(
                title=f"prove {root.name}", cancellable=False, message="starting"
            )
        )
        started = time.monotonic()
        cmd = self.prove_command(root)
        self.log(f"prove: {shlex.join(cmd)}")
        try:
            proc = await asyncio.create_subprocess_exec(
                *cmd,
                cwd=str(root.parent),
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                start_new_session=True,
            )
        except OSError as exc:
            await show(lsp.WorkDoneProgressEnd(message=f"prove could not start: {exc}"))
            self.results[root] = ProveResult(False, f"prove could not start: {exc}", 0.0)
            self.after_prove(root)
            return
        run.process = proc
        if run.cancelled:
            _kill_group(proc, signal.SIGTERM)

        async def read_stderr() -> None:
            assert proc.stderr is not None
            while line := await proc.stderr.readline():
                text = line.decode("utf-8", errors="replace").strip()
                if text:
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
                _kill_group(proc, signal.SIGKILL)
        seconds = time.monotonic() - started
        if run.cancelled:
            await show(lsp.WorkDoneProgressEnd(message="cancelled by a newer save"))
            return
        result = _read_prove(out, proc.returncode, seconds, root.parent)
        self.results[root] = result
        if self.proves.get(root) is run:
            del self.proves[root]
        await show(lsp.WorkDoneProgressEnd(message=result.summary))
        self.after_prove(root)

    def after_prove(self, root: Path) -> None:
        self.relint_root(root)
        lens = self.client_capabilities.workspace
        if lens and lens.code_lens and lens.code_lens.refresh_support:
            with contextlib.suppress(Exception):
                self.workspace_code_lens_refresh(None)


def _kill_group(proc: asyncio.subprocess.Process, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, sig)


def _config(root: Path) -> Any:
    from endstate_author.config import Config, discover

    try:
        return discover(root)
    except Exception:
        return Config()


def _read_prove(out: bytes, code: int | None, seconds: float, cwd: Path) -> ProveResult:
    """prove's JSON report → findings and a one-line summary for the code lens."""
    from endstate_author.diagnostics import Diagnostic

    try:
        report = json.loads(out.decode("utf-8", errors="replace") or "null")
    except ValueError:
        report = None
    if not isinstance(report, dict):
        return ProveResult(False, f"prove failed to run (exit {code}, no JSON report)", seconds)
    diags: list[Diagnostic] = []
    for item in report.get("diagnostics") or []:
        if not isinstance(item, dict) or not isinstance(item.get("code"), str):
            continue
        file = Path(str(item.get("file") or "task.json"))
        if not file.is_absolute():
            file = cwd / file
        sev: Severity = "warning" if item.get("severity") == "warning" else "error"
        diags.append(
            Diagnostic(
                code=item["code"],
                severity=sev,
                message=str(item.get("message", "")),
                file=file,
                line=_int(item.get("line"), 1),
                column=_int(item.get("column"), 1),
                end_line=_int(item.get("end_line"), _int(item.get("line"), 1)),
                end_column=_int(item.get("end_column"), _int(item.get("column"), 1)),
            )
        )
    checks = [
        c
        for t in report.get("tasks") or []
        if isinstance(t, dict)
        for c in t.get("checks") or []
        if isinstance(c, dict)
    ]
    outcomes = [str(c.get("outcome")) for c in checks]
    failed = [str(c.get("check")) for c in checks if c.get("outcome") == "fail"]
    unassessed = [str(c.get("check")) for c in checks if c.get("outcome") == "unassessed"]
    if failed:
        summary = f"prove failed: {', '.join(failed[:3])}" + (" …" if len(failed) > 3 else "")
    elif unassessed:
        summary = f"prove unassessed: {', '.join(unassessed[:3])}"
    elif diags:
        summary = f"prove: {len(diags)} findings"
    else:
        summary = f"proved: {outcomes.count('pass')} checks passed"
    summary += f", {seconds:.1f} s"
    ok = not failed and not unassessed and not any(d.severity == "error" for d in diags)
    return ProveResult(ok, summary, seconds, diags)


def _int(value: Any, default: int) -> int:
    return (
        value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else default
    )


def _place(diag: Diagnostic, data: bytes) -> Diagnostic:
    """Put a prove finding on task.json at the grader it names, or at the graders array."""
    from dataclasses import replace

    from endstate_author.jsonpos import parse

    if diag.file.name != "task.json" or (diag.line, diag.column) != (1, 1):
        return diag
    doc = parse(data)
    graders = doc.node_at_path(("graders",))
    if graders is None:
        return diag
    target = graders
    if graders.kind == "array":
        for item in graders.items:
            name = item.get("name") if item.kind == "object" else None
            if name is not None and isinstance(name.value, str):
                short = name.value.rsplit(":", 1)[-1]
                if name.value in diag.message or f"{short}" in diag.message:
                    target = item
                    break
    sl, sc = doc.index.position(target.start)
    el, ec = doc.index.position(target.end)
    return replace(
        diag,
        line=sl + 1,
        column=sc + 1,
        end_line=el + 1,
        end_column=ec + 1,
        start_offset=target.start,
        end_offset=target.end,
    )


def _position(data: bytes, line: int, column: int) -> lsp.Position:
    """1-based line and character column → LSP position (0-based, UTF-16 units)."""
    from endstate_author.editor import utf16_column
    from endstate_author.jsonpos import LineIndex

    index = LineIndex(data)
    line0 = max(0, line - 1)
    if line0 >= len(index.line_starts):
        return lsp.Position(line=line0, character=max(0, column - 1))
    return lsp.Position(line=line0, character=utf16_column(index.line_text(line0), column - 1))


def _range(data: bytes, start: int, end: int) -> lsp.Range:
    from endstate_author.jsonpos import LineIndex

    index = LineIndex(data)
    sl, sc = index.position(start, utf16=True)
    el, ec = index.position(end, utf16=True)
    return lsp.Range(
        start=lsp.Position(line=sl, character=sc), end=lsp.Position(line=el, character=ec)
    )


def _to_lsp(diag: Diagnostic, data: bytes) -> lsp.Diagnostic:
    if diag.start_offset is not None and diag.end_offset is not None:
        rng = _range(data, diag.start_offset, diag.end_offset)
    else:
        rng = lsp.Range(
            start=_position(data, diag.line, diag.column),
            end=_position(data, diag.end_line, diag.end_column),
        )
    return lsp.Diagnostic(
        range=rng,
        message=diag.message,
        severity=lsp.DiagnosticSeverity.Error
        if diag.severity == "error"
        else lsp.DiagnosticSeverity.Warning,
        code=diag.code,
        source="endstate-author",
    )


def _same_range(a: lsp.Range, b: lsp.Range) -> bool:
    return a.start == b.start and a.end == b.end


# ----- the server and its handlers ----------------------------------------------------------------

server = EndstateServer()


def guarded(
    empty: Callable[[], Any] = lambda: None,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Wrap a handler: an exception becomes a log message and the empty answer."""

    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        async def wrapper(ls: EndstateServer, params: Any) -> Any:
            try:
                result = fn(ls, params)
                if inspect.isawaitable(result):
                    result = await result
                return result
            except Exception as exc:
                ls.log(f"{fn.__name__} failed: {type(exc).__name__}: {exc}", lsp.MessageType.Error)
                return empty()

        return wrapper

    return deco


def _task_doc(ls: EndstateServer, uri: str) -> tuple[Path, bytes] | None:
    path = uri_to_path(uri)
    data = ls.document_bytes(uri)
    if path is None or data is None or path.name != "task.json" or len(data) > MAX_BYTES:
        return None
    return path.parent, data


def _offset(data: bytes, pos: lsp.Position) -> int:
    from endstate_author.jsonpos import LineIndex

    return LineIndex(data).offset(pos.line, pos.character, utf16=True)


@server.feature(lsp.INITIALIZE)
@guarded()
def initialize(ls: EndstateServer, params: lsp.InitializeParams) -> None:
    for problem in ls.settings.update(params.initialization_options):
        ls.log(f"setting ignored: {problem}", lsp.MessageType.Warning)


@server.feature(lsp.INITIALIZED)
@guarded()
async def initialized(ls: EndstateServer, params: lsp.InitializedParams) -> None:
    caps = ls.client_capabilities.workspace
    watched = caps.did_change_watched_files if caps else None
    if watched is not None and watched.dynamic_registration:
        globs = [
            "**/task.json",
            "**/prompt.md",
            "**/oracle.json",
            "**/*.py",
            "**/fixture/**",
            "**/holdout/**",
            "**/solution/**",
            "**/defects/**",
        ]
        options = lsp.DidChangeWatchedFilesRegistrationOptions(
            watchers=[lsp.FileSystemWatcher(glob_pattern=g) for g in globs]
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
        ls.watching = True
    await _pull_configuration(ls)


async def _pull_configuration(ls: EndstateServer) -> None:
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
        for problem in ls.settings.update(values[0]):
            ls.log(f"setting ignored: {problem}", lsp.MessageType.Warning)


@server.feature(lsp.WORKSPACE_DID_CHANGE_CONFIGURATION)
@guarded()
async def did_change_configuration(
    ls: EndstateServer, params: lsp.DidChangeConfigurationParams
) -> None:
    if isinstance(params.settings, dict) and params.settings:
        ls.settings.update(params.settings)
    else:
        await _pull_configuration(ls)
    for root in ls.open_roots():
        ls.relint_root(root)


@server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
@guarded()
def did_open(ls: EndstateServer, params: lsp.DidOpenTextDocumentParams) -> None:
    if params.text_document.uri.endswith("task.json"):
        path = uri_to_path(params.text_document.uri)
        if path is not None:
            ls.forget(path.parent)
        ls.schedule(params.text_document.uri, params.text_document.version, delay_ms=0)


@server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
@guarded()
def did_change(ls: EndstateServer, params: lsp.DidChangeTextDocumentParams) -> None:
    if params.text_document.uri.endswith("task.json"):
        ls.schedule(params.text_document.uri, params.text_document.version)


@server.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
@guarded()
async def did_save(ls: EndstateServer, params: lsp.DidSaveTextDocumentParams) -> None:
    from endstate_author.editor import task_root_of

    path = uri_to_path(params.text_document.uri)
    root = task_root_of(path) if path is not None else None
    if root is not None:
        ls.forget(root)
        await ls.start_prove(root)


@server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
@guarded()
def did_close(ls: EndstateServer, params: lsp.DidCloseTextDocumentParams) -> None:
    uri = params.text_document.uri
    task = ls.pending.pop(uri, None)
    if task is not None:
        task.cancel()
    ls.last.pop(uri, None)
    if uri.endswith("task.json") and not ls.pull_mode:
        ls.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri=uri, diagnostics=[]))


@server.feature(lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES)
@guarded()
async def did_change_watched(ls: EndstateServer, params: lsp.DidChangeWatchedFilesParams) -> None:
    from endstate_author.editor import task_root_of

    roots: set[Path] = set()
    prove: set[Path] = set()
    open_uris = set(ls.workspace.text_documents)
    for change in params.changes:
        path = uri_to_path(change.uri)
        if path is None:
            continue
        root = task_root_of(path)
        if root is not None:
            roots.add(root)
            if change.uri not in open_uris:
                prove.add(root)
        else:
            roots.update(ls.open_roots())  # a suite grader module: every open task may use it
    for root in roots:
        ls.forget(root)
        ls.relint_root(root)
    for root in prove:
        await ls.start_prove(root)


@server.feature(
    lsp.TEXT_DOCUMENT_DIAGNOSTIC,
    lsp.DiagnosticOptions(inter_file_dependencies=True, workspace_diagnostics=False),
)
@guarded(lambda: lsp.FullDocumentDiagnosticReport(items=[]))
def pull_diagnostics(ls: EndstateServer, params: lsp.DocumentDiagnosticParams) -> Any:
    uri = params.text_document.uri
    if not uri.endswith("task.json"):
        return lsp.FullDocumentDiagnosticReport(items=[])
    grouped = ls.lint(uri)
    mine = grouped.pop(uri, [])
    for other, diags in grouped.items():
        ls.text_document_publish_diagnostics(
            lsp.PublishDiagnosticsParams(uri=other, diagnostics=diags)
        )
    return lsp.FullDocumentDiagnosticReport(items=mine)


_KIND = {
    "property": lsp.CompletionItemKind.Property,
    "value": lsp.CompletionItemKind.Value,
    "enum": lsp.CompletionItemKind.EnumMember,
    "function": lsp.CompletionItemKind.Function,
    "file": lsp.CompletionItemKind.File,
    "folder": lsp.CompletionItemKind.Folder,
    "snippet": lsp.CompletionItemKind.Snippet,
}


@server.feature(
    lsp.TEXT_DOCUMENT_COMPLETION, lsp.CompletionOptions(trigger_characters=['"', ":", "/"])
)
@guarded(lambda: lsp.CompletionList(is_incomplete=False, items=[]))
def completion(ls: EndstateServer, params: lsp.CompletionParams) -> lsp.CompletionList:
    from endstate_author.editor import complete

    found = _task_doc(ls, params.text_document.uri)
    if found is None:
        return lsp.CompletionList(is_incomplete=False, items=[])
    root, data = found
    offset = _offset(data, params.position)
    caps = ls.client_capabilities.text_document
    snippets = bool(
        caps
        and caps.completion
        and caps.completion.completion_item
        and caps.completion.completion_item.snippet_support
    )
    items = []
    for item in complete(root, data, offset, graders=ls.graders_for(root)):
        text = item.insert if snippets or not item.is_snippet else _strip_snippet(item.insert)
        items.append(
            lsp.CompletionItem(
                label=item.label,
                kind=_KIND.get(item.kind, lsp.CompletionItemKind.Value),
                detail=item.detail or None,
                documentation=lsp.MarkupContent(
                    kind=lsp.MarkupKind.Markdown, value=item.documentation
                )
                if item.documentation
                else None,
                filter_text=item.filter_text,
                sort_text=item.sort_text,
                insert_text_format=lsp.InsertTextFormat.Snippet
                if snippets
                else lsp.InsertTextFormat.PlainText,
                text_edit=lsp.TextEdit(range=_range(data, item.start, item.end), new_text=text),
            )
        )
    return lsp.CompletionList(is_incomplete=False, items=items)


def _strip_snippet(text: str) -> str:
    """A snippet as plain text for clients without snippet support."""
    import re

    text = re.sub(r"\$\{\d+\|([^,|}]*)[^}]*\|\}", r"\1", text)
    text = re.sub(r"\$\{\d+:([^}]*)\}", r"\1", text)
    text = re.sub(r"\$\{\d+\}|\$\d+", "", text)
    return text.replace("\\$", "$").replace("\\}", "}").replace("\\\\", "\\")


@server.feature(lsp.TEXT_DOCUMENT_HOVER)
@guarded()
def hover(ls: EndstateServer, params: lsp.HoverParams) -> lsp.Hover | None:
    from endstate_author.editor import hover as find_hover

    found = _task_doc(ls, params.text_document.uri)
    if found is None:
        return None
    root, data = found
    info = find_hover(root, data, _offset(data, params.position), graders=ls.graders_for(root))
    if info is None:
        return None
    return lsp.Hover(
        contents=lsp.MarkupContent(kind=lsp.MarkupKind.Markdown, value=info.markdown),
        range=_range(data, info.start, info.end),
    )


@server.feature(lsp.TEXT_DOCUMENT_DEFINITION)
@guarded()
def definition(ls: EndstateServer, params: lsp.DefinitionParams) -> lsp.Location | None:
    from endstate_author.editor import definition as find_definition

    found = _task_doc(ls, params.text_document.uri)
    if found is None:
        return None
    root, data = found
    target = find_definition(
        root, data, _offset(data, params.position), graders=ls.graders_for(root)
    )
    if target is None:
        return None
    pos = _position(ls.file_text(target.file), target.line, target.column)
    return lsp.Location(uri=path_to_uri(target.file), range=lsp.Range(start=pos, end=pos))


@server.feature(lsp.TEXT_DOCUMENT_DOCUMENT_LINK)
@guarded(list)
def document_link(ls: EndstateServer, params: lsp.DocumentLinkParams) -> list[lsp.DocumentLink]:
    from endstate_author.editor import document_links

    found = _task_doc(ls, params.text_document.uri)
    if found is None:
        return []
    root, data = found
    return [
        lsp.DocumentLink(
            range=_range(data, link.start, link.end),
            target=path_to_uri(link.target),
            tooltip=link.tooltip,
        )
        for link in document_links(root, data)
    ]


_SYMBOL_KIND = {
    "array": lsp.SymbolKind.Array,
    "object": lsp.SymbolKind.Object,
    "function": lsp.SymbolKind.Function,
    "property": lsp.SymbolKind.Property,
    "number": lsp.SymbolKind.Number,
    "string": lsp.SymbolKind.String,
}


@server.feature(lsp.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
@guarded(list)
def document_symbol(
    ls: EndstateServer, params: lsp.DocumentSymbolParams
) -> list[lsp.DocumentSymbol]:
    from endstate_author.editor import Symbol, document_symbols

    found = _task_doc(ls, params.text_document.uri)
    if found is None:
        return []
    _root, data = found

    def convert(sym: Symbol) -> lsp.DocumentSymbol:
        return lsp.DocumentSymbol(
            name=sym.name or '""',
            detail=sym.detail or None,
            kind=_SYMBOL_KIND[sym.kind],
            range=_range(data, sym.start, sym.end),
            selection_range=_range(data, sym.select_start, sym.select_end),
            children=[convert(c) for c in sym.children] or None,
        )

    return [convert(s) for s in document_symbols(data)]


@server.feature(
    lsp.TEXT_DOCUMENT_CODE_ACTION,
    lsp.CodeActionOptions(
        code_action_kinds=[lsp.CodeActionKind.QuickFix, lsp.CodeActionKind.SourceFixAll]
    ),
)
@guarded(list)
def code_action(ls: EndstateServer, params: lsp.CodeActionParams) -> list[lsp.CodeAction]:
    from endstate_author.editor import fix_all, mandatory_assertions, quick_fixes

    uri = params.text_document.uri
    found = _task_doc(ls, uri)
    if found is None:
        return []
    root, data = found
    diags = ls.last.get(uri)
    if diags is None:
        ls.lint(uri)
        diags = ls.last.get(uri, [])
    wanted = params.context.only
    out: list[lsp.CodeAction] = []
    want_quick = not wanted or any(str(k).startswith("quickfix") for k in wanted)
    want_all = not wanted or any(str(k).startswith("source") for k in wanted)
    if want_quick:
        for action in quick_fixes(diags):
            lsp_diags = [_to_lsp(d, data) for d in action.diagnostics]
            if not any(_overlaps(d.range, params.range) for d in lsp_diags):
                continue
            out.append(_code_action(ls, action, uri, data, lsp_diags, lsp.CodeActionKind.QuickFix))
        extra = mandatory_assertions(root, data)
        if extra is not None:
            related = [
                _to_lsp(d, data) for d in diags if d.code in ("ES301", "ES302", "ES303", "ES304")
            ]
            out.append(_code_action(ls, extra, uri, data, related, lsp.CodeActionKind.QuickFix))
    if want_all:
        everything = fix_all(diags)
        if everything is not None:
            out.append(_code_action(ls, everything, uri, data, [], lsp.CodeActionKind.SourceFixAll))
    return out


def _overlaps(a: lsp.Range, b: lsp.Range) -> bool:
    def key(p: lsp.Position) -> tuple[int, int]:
        return (p.line, p.character)

    return key(a.start) <= key(b.end) and key(b.start) <= key(a.end)


def _code_action(
    ls: EndstateServer,
    action: Action,
    uri: str,
    data: bytes,
    diags: list[lsp.Diagnostic],
    kind: lsp.CodeActionKind,
) -> lsp.CodeAction:
    changes: list[Any] = []
    by_file: dict[Path, list[Any]] = {}
    for edit in action.edits:
        by_file.setdefault(edit.file, []).append(edit)
    doc_path = uri_to_path(uri)
    for file, edits in by_file.items():
        target_uri = (
            uri
            if doc_path is not None and file.resolve() == doc_path.resolve()
            else path_to_uri(file)
        )
        text = data if target_uri == uri else ls.file_text(file)
        version = None
        with contextlib.suppress(Exception):
            version = ls.workspace.get_text_document(target_uri).version
        changes.append(
            lsp.TextDocumentEdit(
                text_document=lsp.OptionalVersionedTextDocumentIdentifier(
                    uri=target_uri, version=version
                ),
                edits=[
                    lsp.TextEdit(range=_range(text, e.start, e.end), new_text=e.new_text)
                    for e in sorted(edits, key=lambda e: e.start)
                ],
            )
        )
    for create in action.creates:
        target = path_to_uri(create.file)
        changes.append(
            lsp.CreateFile(uri=target, options=lsp.CreateFileOptions(ignore_if_exists=True))
        )
        if create.content:
            zero = lsp.Position(line=0, character=0)
            changes.append(
                lsp.TextDocumentEdit(
                    text_document=lsp.OptionalVersionedTextDocumentIdentifier(
                        uri=target, version=None
                    ),
                    edits=[
                        lsp.TextEdit(range=lsp.Range(start=zero, end=zero), new_text=create.content)
                    ],
                )
            )
    return lsp.CodeAction(
        title=action.title,
        kind=kind,
        diagnostics=diags or None,
        is_preferred=action.preferred or None,
        edit=lsp.WorkspaceEdit(document_changes=changes),
    )


@server.feature(lsp.TEXT_DOCUMENT_CODE_LENS)
@guarded(list)
def code_lens(ls: EndstateServer, params: lsp.CodeLensParams) -> list[lsp.CodeLens]:
    uri = params.text_document.uri
    path = uri_to_path(uri)
    if path is None or path.name != "task.json":
        return []
    root = path.parent
    result = ls.results.get(root)
    if root in ls.proves:
        title = "prove: running…"
    elif result is not None:
        title = result.summary
    elif ls.settings.may_prove:
        title = "prove: not run yet (save to run)"
    elif not ls.settings.trusted:
        title = "prove on save is off: the workspace is not trusted"
    else:
        title = "prove on save is off"
    zero = lsp.Position(line=0, character=0)
    return [
        lsp.CodeLens(
            range=lsp.Range(start=zero, end=zero),
            command=lsp.Command(title=title, command=PROVE_COMMAND, arguments=[uri]),
        )
    ]


@server.command(PROVE_COMMAND)
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
        await ls.start_prove(path.parent)
    except Exception as exc:
        ls.log(f"prove command failed: {exc}", lsp.MessageType.Error)


@server.feature(lsp.SHUTDOWN)
@guarded()
async def shutdown(ls: EndstateServer, params: Any) -> None:
    for run in list(ls.proves.values()):
        await ls.cancel_prove(run)
    ls.proves.clear()


def main(tcp: str | None = None) -> None:
    """Serve over stdio, or on ``HOST:PORT`` when ``tcp`` is given."""
    if tcp:
        host, _, port = tcp.rpartition(":")
        if not port.isdigit():
            raise SystemExit(f"--tcp wants HOST:PORT, got {tcp!r}")
        server.start_tcp(host or "127.0.0.1", int(port))
    else:
        server.start_io()
