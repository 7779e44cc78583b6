"""A real OpenAI-compatible HTTP server on loopback, for testing the provider end to end.

Not a patched SDK: the openai client talks HTTP to this server exactly as it would to a
hosted API, so retries, timeouts, tool-call parsing and usage are exercised for real.
Behaviour is scripted per request with a queue of actions::

    server.reply(content="...", tool_calls=[("read", {"path": "a"})], usage=(12, 3))
    server.fail(429, retry_after_ms=5)     # next request gets HTTP 429
    server.fail(500)                       # ... or a 5xx
    server.reply(..., delay_s=2.0)         # a slow answer, for the timeout path

An empty queue answers 500 with a message saying so, so a test that under-scripts fails
loudly instead of hanging. Every request body is kept in ``server.requests``.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class _Action:
    status: int = 200
    body: dict[str, Any] = field(default_factory=dict)
    delay_s: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)


class FakeOpenAI:
    """``with FakeOpenAI() as server: OpenAIProvider(..., base_url=server.base_url)``."""

    def __init__(self) -> None:
        self.actions: deque[_Action] = deque()
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self._lock = threading.Lock()
        self._counter = 0
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # quiet test output
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", "0"))
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw or b"{}")
                except json.JSONDecodeError:
                    body = {"_unparsed": raw.decode("utf-8", "replace")}
                with owner._lock:
                    owner.requests.append(body)
                    owner.headers.append({k.lower(): v for k, v in self.headers.items()})
                    action = owner.actions.popleft() if owner.actions else None
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    action = _Action(404, {"error": {"message": f"no route {self.path}"}})
                if action is None:
                    action = _Action(500, {"error": {"message": "fake server: queue is empty"}})
                if action.delay_s:
                    time.sleep(action.delay_s)
                payload = json.dumps(action.body).encode()
                try:
                    self.send_response(action.status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(payload)))
                    for name, value in action.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client timed out and hung up: that is the point of a slow reply

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def __enter__(self) -> FakeOpenAI:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def reply(
        self,
        content: str = "",
        *,
        tool_calls: list[tuple[str, dict[str, Any] | str]] | None = None,
        usage: tuple[int, int] | None = (10, 5),
        finish_reason: str | None = None,
        model: str = "fake-model",
        delay_s: float = 0.0,
    ) -> None:
        """Queue one chat completion. A tool call's args may be a raw string (malformed JSON)."""
        calls = []
        for name, args in tool_calls or []:
            self._counter += 1
            calls.append(
                {
                    "id": f"call_{self._counter}",
                    "type": "function",
                    "function": {
                        "name": name,
                        "arguments": args if isinstance(args, str) else json.dumps(args),
                    },
                }
            )
        message: dict[str, Any] = {"role": "assistant", "content": content or None}
        if calls:
            message["tool_calls"] = calls
        body: dict[str, Any] = {
            "id": f"chatcmpl-{self._counter}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": finish_reason or ("tool_calls" if calls else "stop"),
                }
            ],
        }
        if usage is not None:
            body["usage"] = {
                "prompt_tokens": usage[0],
                "completion_tokens": usage[1],
                "total_tokens": usage[0] + usage[1],
            }
        self.actions.append(_Action(200, body, delay_s))

    def fail(self, status: int, *, retry_after_ms: int | None = None, message: str = "") -> None:
        """Queue one error response (429, 500, 503, 400, 401...)."""
        headers = {} if retry_after_ms is None else {"retry-after-ms": str(retry_after_ms)}
        text = message or f"fake server says {status}"
        self.actions.append(
            _Action(status, {"error": {"message": text, "type": "fake"}}, 0.0, headers)
        )
