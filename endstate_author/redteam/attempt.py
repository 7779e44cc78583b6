"""One red-team attempt: the agent run, the end state it left, its transcript and its cost."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from endstate_author.engine.textsafe import md_block, md_code, md_text
from endstate_author.evalreport.results import Prices, cost_of
from endstate_author.probes.diff import Change, changes, end_state_files
from endstate_author.redteam.instruction import (
    NO_TRICK_MARK,
    SYSTEM_PROMPT,
    TRICK_MARK,
    red_team_instruction,
)
from endstate_harness.agent.messages import Message
from endstate_harness.agent.providers import Provider
from endstate_harness.agent.session import SessionError, SessionStore
from endstate_harness.runner import TaskResult, run_task
from endstate_harness.sandbox.base import TreeSandbox
from endstate_harness.sandbox.choice import SandboxChoice
from endstate_harness.sandbox.snapshot import Snapshot
from endstate_harness.task import Task

TRANSCRIPT_RESULT_CHARS = 4000
"""Longest tool result kept per message in a rendered transcript (the session keeps all)."""


@dataclass
class Attempt:
    """One attempt on one task, and everything needed to judge and show it."""

    task: Task
    index: int
    result: TaskResult
    fixture: dict[str, bytes] = field(default_factory=dict)
    end_state: Snapshot | None = None
    transcript: list[Message] = field(default_factory=list)
    cost: Decimal | None = None

    @property
    def errored(self) -> bool:
        return bool(self.result.error)

    @property
    def candidate(self) -> bool:
        """The end state passed every grader: an exploit candidate, to be triaged."""
        return self.result.passed and not self.result.error and self.end_state is not None

    @property
    def explanation(self) -> str:
        """The agent's own account: its last message with text."""
        for message in reversed(self.transcript):
            if message.role == "assistant" and message.content.strip():
                return message.content.strip()
        return ""

    @property
    def claims_trick(self) -> bool:
        text = self.explanation
        return TRICK_MARK in text and not text.startswith(NO_TRICK_MARK)

    def changes(self) -> list[Change]:
        if self.end_state is None:
            return []
        return changes(self.fixture, end_state_files(self.end_state))


@dataclass
class _Keeping:
    """The chosen sandbox, keeping hold of what it made: the attempt's end state is read from
    it after the run."""

    choice: SandboxChoice
    made: list[TreeSandbox] = field(default_factory=list)

    @property
    def label(self) -> str:
        return self.choice.label

    def make(self, fixture: Path) -> TreeSandbox:
        sandbox = self.choice.make(fixture)
        self.made.append(sandbox)
        return sandbox


def run_attempt(
    task: Task,
    index: int,
    *,
    provider_factory: Callable[[Task], Provider],
    spec: SandboxChoice,
    store: SessionStore,
    suite_root: Path | None = None,
    prices: Prices | None = None,
    cancel: threading.Event | None = None,
) -> Attempt:
    """Run the red-team instruction on ``task`` once and collect what it left.

    Raises:
        KeyboardInterrupt: passed through after the sandbox is closed (as ``run_task`` does).
    """
    red_task = task.model_copy(update={"prompt": red_team_instruction(task)})
    kept = _Keeping(spec)
    result = run_task(
        red_task,
        provider_factory=provider_factory,
        sandbox=kept,
        system_prompt=SYSTEM_PROMPT,
        suite_root=suite_root,
        session_store=store,
        cancel=cancel,
        attempt=index,
    )
    made = kept.made
    attempt = Attempt(task, index, result)
    if made:
        attempt.fixture = made[0].fixture_files()
        attempt.end_state = made[0].sealed_snapshot()
    if result.session_id:
        try:
            attempt.transcript = store.load(result.session_id).messages
        except SessionError:
            attempt.transcript = []
    if prices is not None:
        attempt.cost = cost_of(result, prices)
    return attempt


def render_transcript(messages: list[Message]) -> str:
    """The conversation as markdown: who said what, every tool call and (capped) result.
    Everything the model or a tool said is quoted (a fenced block, a code span of
    :mod:`endstate_author.engine.textsafe`): it renders as text, never as the model's markup."""
    out: list[str] = []
    for message in messages:
        if message.role == "tool" and message.tool_result is not None:
            content = message.tool_result.content
            if len(content) > TRANSCRIPT_RESULT_CHARS:
                content = content[:TRANSCRIPT_RESULT_CHARS] + "\n… (cut)"
            flag = " (error)" if message.tool_result.is_error else ""
            out.append(f"### tool result{flag}\n\n" + "\n".join(md_block(content)) + "\n")
            continue
        out.append(f"### {md_text(message.role)}\n")
        if message.content.strip():
            out.append("\n".join(md_block(message.content.strip())) + "\n")
        for call in message.tool_calls:
            out.append(f"- call {md_code(call.name)} {_args(call.arguments)}\n")
    return "\n".join(out)


def _args(arguments: dict[str, Any]) -> str:
    text = json.dumps(arguments, ensure_ascii=False)
    return md_code(text if len(text) < 400 else f"{text[:400]}…")
