"""A minimal LSP client over the real server's stdio, for fuzzing and hostile-input tests.

Raw JSON-RPC rather than pytest-lsp: the fuzzer needs exact control of what goes on the wire
(texts with lone surrogates, a stream of full-text edits) and a wall-clock bound per answer,
and must see the server's own log messages, where a swallowed crash would show up. Shared by
``tests/reliability`` and ``bench/fuzz.py`` (see :mod:`tests.support`).
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

SERVER = [sys.executable, "-m", "endstate_lsp"]


class LspClient:
    """``with LspClient(env) as c: c.initialize(); c.open(uri, text); c.change(uri, text)``."""

    def __init__(
        self,
        env: dict[str, str] | None = None,
        cwd: Path | None = None,
        command: list[str] | None = None,
    ) -> None:
        self.proc = subprocess.Popen(
            command or SERVER,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=cwd,
            start_new_session=True,
        )
        self.inbox: queue.Queue[dict[str, Any]] = queue.Queue()
        self.errors: list[str] = []
        """Error-level window/logMessage texts: a handler that failed and was caught."""
        self.stderr = b""
        self._next_id = 0
        self._versions: dict[str, int] = {}
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self._err_reader = threading.Thread(target=self._read_stderr, daemon=True)
        self._err_reader.start()

    # --- wire -----------------------------------------------------------------------------

    def _read(self) -> None:
        out = self.proc.stdout
        assert out is not None
        while True:
            headers: dict[str, str] = {}
            while True:
                line = out.readline()
                if not line:
                    return
                line = line.strip()
                if not line:
                    break
                name, _, value = line.decode("ascii", "replace").partition(":")
                headers[name.strip().lower()] = value.strip()
            body = out.read(int(headers.get("content-length", "0")))
            message = json.loads(body)
            if message.get("method") == "window/logMessage" and message["params"]["type"] == 1:
                self.errors.append(message["params"]["message"])
            if "id" in message and "method" in message:  # a request from the server: answer it
                self._send({"jsonrpc": "2.0", "id": message["id"], "result": None})
                continue
            self.inbox.put(message)

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        self.stderr = self.proc.stderr.read()

    def _send(self, message: dict[str, Any]) -> None:
        body = json.dumps(message, ensure_ascii=True).encode()
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def notify(self, method: str, params: Any) -> None:
        self._send({"jsonrpc": "2.0", "method": method, "params": params})

    def request(self, method: str, params: Any, timeout: float = 5.0) -> Any:
        self._next_id += 1
        wanted = self._next_id
        self._send({"jsonrpc": "2.0", "id": wanted, "method": method, "params": params})
        deadline = time.monotonic() + timeout
        while True:
            message = self.inbox.get(timeout=max(0.001, deadline - time.monotonic()))
            if message.get("id") == wanted:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result")

    # --- protocol -------------------------------------------------------------------------

    def initialize(self, options: dict[str, Any] | None = None, root: Path | None = None) -> Any:
        result = self.request(
            "initialize",
            {
                "processId": os.getpid(),
                "rootUri": root.as_uri() if root else None,
                "capabilities": {},
                "initializationOptions": options if options is not None else {"debounceMs": 0},
            },
            timeout=30.0,
        )
        self.notify("initialized", {})
        return result

    def open(self, uri: str, text: str) -> None:
        self._versions[uri] = 1
        self.notify(
            "textDocument/didOpen",
            {"textDocument": {"uri": uri, "languageId": "json", "version": 1, "text": text}},
        )

    def change(self, uri: str, text: str) -> int:
        version = self._versions[uri] = self._versions[uri] + 1
        self.notify(
            "textDocument/didChange",
            {"textDocument": {"uri": uri, "version": version}, "contentChanges": [{"text": text}]},
        )
        return version

    def diagnostics(self, uri: str, version: int, timeout: float) -> list[dict[str, Any]] | None:
        """The diagnostics published for ``uri`` at ``version``; None when none came in time."""
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            try:
                message = self.inbox.get(timeout=remaining)
            except queue.Empty:
                return None
            if message.get("method") != "textDocument/publishDiagnostics":
                continue
            params = message["params"]
            if params["uri"] == uri and params.get("version") == version:
                diags: list[dict[str, Any]] = params["diagnostics"]
                return diags

    def close(self) -> int:
        """Shut down politely; kill the whole group if it does not go. Returns the exit code."""
        try:
            self.request("shutdown", None, timeout=5.0)
            self.notify("exit", None)
        except (OSError, queue.Empty, RuntimeError):
            pass
        try:
            return self.proc.wait(timeout=5.0)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, 9)
            return self.proc.wait()
        finally:
            for pipe in (self.proc.stdin, self.proc.stdout):
                try:
                    if pipe is not None:
                        pipe.close()
                except OSError:
                    pass

    def __enter__(self) -> LspClient:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc.poll() is None:
            self.close()
