"""The conversation's value types, independent of any provider's wire format.

Every provider translates its own wire objects into these, so the loop, the session store
and the context budget never see a vendor type. They are pydantic models because the
session store persists them as JSON and must read back exactly what it wrote.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, Field

from endstate_harness.task import StopReason

Role = Literal["system", "user", "assistant", "tool"]


class ToolCall(BaseModel):
    """A model's request to run one tool."""

    id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class ToolResult(BaseModel):
    """What a tool answered, keyed by the call it answers."""

    call_id: str
    content: str
    is_error: bool = False


class Message(BaseModel):
    """One entry of the transcript.

    A ``tool`` message carries exactly one result: results are appended one by one as the
    calls finish, so a kill in the middle of a batch leaves a record of exactly the calls
    that completed (and the store never rewrites a row).
    """

    role: Role
    content: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    tool_result: ToolResult | None = None


class Usage(BaseModel):
    """Token usage of one model call, or a sum of them."""

    input_tokens: int = 0
    output_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
        )


class Response(BaseModel):
    """One model call's answer, normalised."""

    message: Message
    usage: Usage = Field(default_factory=Usage)
    stop_reason: StopReason = "end_turn"
    model: str = ""
    estimated: bool = False
    """True when ``usage`` is a chars/4 estimate rather than the provider's own count."""


def message_chars(message: Message) -> int:
    """Characters the context budget charges for one message.

    Message text, every tool call's name and serialised arguments, and the tool result:
    the three things that occupy a model's context (task-format.md §5).
    """
    chars = len(message.content)
    for call in message.tool_calls:
        chars += len(call.name) + len(json.dumps(call.arguments, sort_keys=True))
    if message.tool_result is not None:
        chars += len(message.tool_result.content)
    return chars


def estimate_tokens(messages: list[Message]) -> int:
    """chars/4 over a list of messages: deliberately not a tokeniser.

    It has to work for every provider, including ones whose tokeniser is private, and it
    has to be the same number in prove, eval and the editor.
    """
    return sum(message_chars(m) for m in messages) // 4
