"""Model providers: the loop's only view of a model."""

from __future__ import annotations

import json
import os
import random
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

from endstate_harness.agent.messages import (
    Message,
    Response,
    ToolCall,
    Usage,
    estimate_tokens,
    message_chars,
)
from endstate_harness.task import StopReason

INVALID_ARGUMENTS_KEY = "_unparsed_arguments"
"""Where a tool call's arguments go when the model sent something that is not a JSON object."""


class ProviderError(RuntimeError):
    """The model could not be asked (network, auth, bad request, retries exhausted)."""


@runtime_checkable
class Provider(Protocol):
    """Anything that answers a conversation with one assistant message."""

    model: str

    def complete(
        self,
        messages: list[Message],
        tools: list[dict[str, Any]],
        *,
        timeout_s: float | None = None,
    ) -> Response: ...


# --- OpenAI-compatible ---------------------------------------------------------------------

_FINISH: dict[str, StopReason] = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
    "content_filter": "error",
}


def to_wire(messages: list[Message]) -> list[dict[str, Any]]:
    """Our messages as chat-completions messages (one ``tool`` message per result)."""
    wire: list[dict[str, Any]] = []
    for m in messages:
        if m.role == "tool":
            result = m.tool_result
            if result is not None:
                wire.append(
                    {"role": "tool", "tool_call_id": result.call_id, "content": result.content}
                )
            continue
        entry: dict[str, Any] = {"role": m.role, "content": m.content}
        if m.tool_calls:
            entry["content"] = m.content or None
            entry["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": json.dumps(c.arguments)},
                }
                for c in m.tool_calls
            ]
        wire.append(entry)
    return wire


def tools_to_wire(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "function": {
                "name": t["name"],
                "description": t["description"],
                "parameters": t["parameters"],
            },
        }
        for t in tools
    ]


def parse_arguments(raw: str | None) -> dict[str, Any]:
    """A tool call's JSON arguments; anything else is kept raw for the loop to refuse."""
    try:
        value = json.loads(raw or "{}")
    except json.JSONDecodeError:
        return {INVALID_ARGUMENTS_KEY: raw or ""}
    return value if isinstance(value, dict) else {INVALID_ARGUMENTS_KEY: raw or ""}


class OpenAIProvider:
    """Chat completions with tool calls, usage, retries with backoff and request timeouts.

    The API key comes from ``OPENAI_API_KEY`` (a placeholder is used when it is unset and a
    ``base_url`` is given, because local servers ignore it). Retried: HTTP 429 and 5xx,
    timeouts and connection failures, up to ``max_retries`` times with exponential backoff
    (``backoff_s * 2**attempt``, jittered, capped at ``max_backoff_s``; a ``Retry-After``
    header wins when it is present). Any other status (400, 401, 404...) fails at once:
    retrying a bad request only delays the error.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout_s: float = 120.0,
        max_retries: int = 4,
        backoff_s: float = 0.5,
        max_backoff_s: float = 20.0,
        max_output_tokens: int | None = None,
        temperature: float | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        import openai  # deferred: the scripted paths must not pay for the SDK's import

        key = api_key or os.environ.get("OPENAI_API_KEY")
        if not key:
            if base_url is None:
                raise ProviderError(
                    "OPENAI_API_KEY is not set; export it, or pass --base-url for a local "
                    "server that needs no key"
                )
            key = "placeholder-key-for-local-server"
        self.model = model
        self.base_url = base_url
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self.max_output_tokens = max_output_tokens
        self.temperature = temperature
        self.retries = 0
        """Retries made so far, summed over every call (reported, and asserted by tests)."""
        self._sleep = sleep
        self._openai = openai
        self._client = openai.OpenAI(
            base_url=base_url, api_key=key, timeout=timeout_s, max_retries=0
        )

    def complete(
        self,
        messages: list[Message],
        tools: list[dict[str, Any]],
        *,
        timeout_s: float | None = None,
    ) -> Response:
        kwargs: dict[str, Any] = {"model": self.model, "messages": to_wire(messages)}
        if tools:
            kwargs["tools"] = tools_to_wire(tools)
        if self.max_output_tokens is not None:
            kwargs["max_tokens"] = self.max_output_tokens
        if self.temperature is not None:
            kwargs["temperature"] = self.temperature
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        oa = self._openai
        attempt = 0
        while True:
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                raise ProviderError("the run's deadline passed while waiting for the model")
            per_request = self.timeout_s if remaining is None else min(self.timeout_s, remaining)
            try:
                completion = self._client.chat.completions.create(**kwargs, timeout=per_request)
                break
            except (
                oa.RateLimitError,
                oa.InternalServerError,
                oa.APITimeoutError,
                oa.APIConnectionError,
            ) as exc:
                if attempt >= self.max_retries:
                    raise ProviderError(
                        f"{self._where()}: gave up after {attempt + 1} attempts: {_describe(exc)}"
                    ) from exc
                delay = self._delay(attempt, exc)
                if deadline is not None and time.monotonic() + delay >= deadline:
                    raise ProviderError(
                        f"{self._where()}: {_describe(exc)}; no time left before the deadline "
                        "to retry"
                    ) from exc
                attempt += 1
                self.retries += 1
                self._sleep(delay)
            except oa.APIStatusError as exc:
                raise ProviderError(f"{self._where()}: {_describe(exc)}") from exc
            except oa.OpenAIError as exc:
                raise ProviderError(f"{self._where()}: {exc}") from exc
        return self._normalise(completion, messages)

    def _where(self) -> str:
        return f"model {self.model!r} at {self.base_url or 'api.openai.com'}"

    def _delay(self, attempt: int, exc: Exception) -> float:
        response = getattr(exc, "response", None)
        headers = getattr(response, "headers", None)
        if headers is not None:
            for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
                value = headers.get(name)
                if value is not None:
                    try:
                        return min(float(value) * scale, self.max_backoff_s)
                    except ValueError:
                        pass
        base = min(self.backoff_s * (2**attempt), self.max_backoff_s)
        return base * (0.5 + random.random() / 2)

    def _normalise(self, completion: Any, sent: list[Message]) -> Response:
        if not getattr(completion, "choices", None):
            raise ProviderError(f"{self._where()}: the answer has no choices")
        choice = completion.choices[0]
        calls = [
            ToolCall(
                id=c.id or f"call_{i}",
                name=c.function.name,
                arguments=parse_arguments(c.function.arguments),
            )
            for i, c in enumerate(choice.message.tool_calls or [])
            if getattr(c, "function", None) is not None
        ]
        message = Message(role="assistant", content=choice.message.content or "", tool_calls=calls)
        usage = completion.usage
        estimated = usage is None
        if usage is None:
            counted = Usage(
                input_tokens=estimate_tokens(sent), output_tokens=message_chars(message) // 4
            )
        else:
            counted = Usage(
                input_tokens=usage.prompt_tokens or 0, output_tokens=usage.completion_tokens or 0
            )
        stop = _FINISH.get(choice.finish_reason or "stop", "end_turn")
        if calls:
            stop = "tool_use"
        return Response(
            message=message,
            usage=counted,
            stop_reason=stop,
            model=completion.model or self.model,
            estimated=estimated,
        )


def _describe(exc: Exception) -> str:
    status = getattr(exc, "status_code", None)
    text = str(exc)
    if len(text) > 300:
        text = text[:300] + "..."
    return f"HTTP {status}: {text}" if status else f"{type(exc).__name__}: {text}"


# --- scripted ------------------------------------------------------------------------------

ScriptStep = Sequence[dict[str, Any]]
"""One model turn: a list of ``{"tool": name, "args": {...}}``."""


class ScriptedProvider:
    """Plays a list of steps, then ends its turn with ``final_text``.

    Usage is estimated as chars/4 (input: the messages it was sent, after compaction;
    output: the calls it made) so that token counters and budgets mean something under a
    scripted run. Its position is its own state, not derived from the transcript: it
    stands for a model service, which outlives the agent process a recovery test kills.
    """

    def __init__(
        self, steps: Sequence[ScriptStep], *, model: str = "scripted", final_text: str = "Done."
    ) -> None:
        self.model = model
        self.steps = [list(step) for step in steps]
        self.final_text = final_text
        self.position = 0

    def complete(
        self,
        messages: list[Message],
        tools: list[dict[str, Any]],
        *,
        timeout_s: float | None = None,
    ) -> Response:
        if self.position < len(self.steps):
            step = self.steps[self.position]
            calls = [
                ToolCall(id=f"call_{self.position}_{i}", name=c["tool"], arguments=dict(c["args"]))
                for i, c in enumerate(step)
            ]
            message = Message(role="assistant", tool_calls=calls)
            stop: StopReason = "tool_use"
        else:
            message = Message(role="assistant", content=self.final_text)
            stop = "end_turn"
        self.position += 1
        usage = Usage(
            input_tokens=estimate_tokens(messages), output_tokens=message_chars(message) // 4
        )
        return Response(
            message=message, usage=usage, stop_reason=stop, model=self.model, estimated=True
        )
