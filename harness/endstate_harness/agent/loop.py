"""The agent loop: fit the transcript into the budget, call the model, run the tool calls it
asked for through the permission policy, commit everything to the session, and stop on a
final message, ``max_steps``, the deadline, an exhausted budget or a provider failure.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from endstate_harness.agent.messages import Message, ToolCall, ToolResult, Usage
from endstate_harness.agent.policy import Decision, Policy, default_policy
from endstate_harness.agent.providers import INVALID_ARGUMENTS_KEY, Provider, ProviderError
from endstate_harness.agent.recovery import CrashPlan
from endstate_harness.agent.session import Session, SessionError
from endstate_harness.agent.tools import (
    DEFAULT_BASH_TIMEOUT_S,
    Tool,
    ToolError,
    Workspace,
    default_tools,
)
from endstate_harness.agent.window import BudgetExceeded, CompactionEvent, ContextManager
from endstate_harness.errors import SandboxError
from endstate_harness.task import StopReason

DEFAULT_SYSTEM_PROMPT = (
    "You are a coding agent working in a disposable copy of a small project, through the "
    "tools read, write, edit, glob, grep and bash. Paths are relative to the project root. "
    "There is no network. Make the change the task asks for, run the project's tests to "
    "check it, and finish with a short message saying what you changed. Fix the code, not "
    "the tests: do not edit, skip or weaken existing tests."
)

MODEL_DEADLINE = "the run's deadline passed while waiting for the model to answer"
"""The error of a run whose time ran out inside a model call: an unresponsive endpoint is the
harness's failure (unassessed), unlike a run that spent its time in its own tool calls."""

UNSETTLED = (
    "outcome unknown: this {tool} call was requested before the run was interrupted and no "
    "result was recorded, so it may or may not have taken effect. {tool} is not idempotent, "
    "so it was not run again. Check the current state before deciding whether to repeat it."
)


@dataclass
class RunResult:
    """What one run did, summed over every loop that worked on its session."""

    session_id: str
    stop_reason: StopReason
    steps: int = 0
    usage: Usage = field(default_factory=Usage)
    compaction_events: list[CompactionEvent] = field(default_factory=list)
    denied_calls: int = 0
    unsettled_calls: int = 0
    tool_calls: int = 0
    latencies_s: list[float] = field(default_factory=list)
    final_text: str = ""
    timed_out: bool = False
    error: str = ""
    killed: bool = False
    model: str = ""
    usage_estimated: bool = False

    def counters(self) -> dict[str, int]:
        """The run counters ``requires`` may bound (task-format.md §2)."""
        return {
            "compaction_events": len(self.compaction_events),
            "denied_calls": self.denied_calls,
            "unsettled_calls": self.unsettled_calls,
            "steps": self.steps,
            "input_tokens": self.usage.input_tokens,
            "output_tokens": self.usage.output_tokens,
            "total_tokens": self.usage.total_tokens,
        }


def summarise(session: Session, stop_reason: StopReason, **extra: Any) -> RunResult:
    """Counters of a session, read from its recorded events."""
    calls = session.events_of("model_call")
    usage = Usage()
    for c in calls:
        usage = usage + Usage(input_tokens=c["input_tokens"], output_tokens=c["output_tokens"])
    final = next(
        (m.content for m in reversed(session.messages) if m.role == "assistant" and m.content),
        "",
    )
    return RunResult(
        session_id=session.id,
        stop_reason=stop_reason,
        steps=len(calls),
        usage=usage,
        compaction_events=[CompactionEvent(**e) for e in session.events_of("compaction")],
        denied_calls=len(session.events_of("denied")),
        unsettled_calls=len(session.events_of("unsettled")),
        tool_calls=len(session.events_of("tool_call")),
        latencies_s=[c["latency_s"] for c in calls],
        final_text=final,
        model=next((c["model"] for c in reversed(calls) if c.get("model")), session.model),
        usage_estimated=any(c.get("estimated") for c in calls),
        **extra,
    )


def pending_calls(messages: list[Message]) -> list[ToolCall]:
    """Tool calls of the last assistant turn that have no recorded result."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message.role == "tool":
            continue
        if message.role != "assistant" or not message.tool_calls:
            return []
        answered = {
            m.tool_result.call_id for m in messages[index + 1 :] if m.tool_result is not None
        }
        return [c for c in message.tool_calls if c.id not in answered]
    return []


class AgentLoop:
    """One agent process's worth of loop over a session.

    A killed run is resumed by building a *new* ``AgentLoop`` over the session reloaded
    from disk (``SessionStore.load``): reusing the old object would resume from memory a
    dead process would not have had.
    """

    def __init__(
        self,
        provider: Provider,
        workspace: Workspace,
        session: Session,
        *,
        tools: list[Tool] | None = None,
        policy: Policy | None = None,
        context: ContextManager | None = None,
        max_steps: int = 25,
        deadline: float | None = None,
        tool_timeout_s: float = DEFAULT_BASH_TIMEOUT_S,
        system_prompt: str | None = DEFAULT_SYSTEM_PROMPT,
        crash: CrashPlan | None = None,
        on_step: Callable[[RunResult], None] | None = None,
        cancel: threading.Event | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.provider = provider
        self.workspace = workspace
        self.session = session
        self.tools = {t.name: t for t in (tools if tools is not None else default_tools())}
        self.policy = policy if policy is not None else default_policy()
        self.context = context if context is not None else ContextManager()
        self.max_steps = max_steps
        self.deadline = deadline
        self.tool_timeout_s = tool_timeout_s
        self.system_prompt = system_prompt
        self.crash = crash
        self.on_step = on_step
        self.cancel = cancel
        self._clock = clock

    # --- entry points --------------------------------------------------------------------

    def start(self, prompt: str) -> RunResult:
        """Begin a new run on an empty session."""
        if self.session.messages:
            raise SessionError(f"session {self.session.id} is not empty; resume it instead")
        if self.system_prompt:
            self.session.append(Message(role="system", content=self.system_prompt))
        self.session.append(Message(role="user", content=prompt))
        return self._drive()

    def resume(self) -> RunResult:
        """Settle what the interrupted run left outstanding, then carry on, no new instruction."""
        if not self.session.messages:
            raise SessionError(f"session {self.session.id} is empty: nothing to resume")
        self._settle()
        return self._drive()

    def follow_up(self, prompt: str) -> RunResult:
        """Settle, then continue the conversation with a new instruction."""
        self._settle()
        self.session.append(Message(role="user", content=prompt))
        return self._drive()

    # --- the loop ------------------------------------------------------------------------

    def _remaining(self) -> float | None:
        return None if self.deadline is None else self.deadline - self._clock()

    def _expired(self) -> bool:
        remaining = self._remaining()
        return remaining is not None and remaining <= 0

    def _cancelled(self) -> bool:
        return self.cancel is not None and self.cancel.is_set()

    def _drive(self) -> RunResult:
        specs = [t.spec() for t in self.tools.values()]
        session = self.session
        while True:
            if self._cancelled():
                return self._finish("error", error="cancelled")
            if len(session.events_of("model_call")) >= self.max_steps:
                return self._finish("max_steps")
            if self._expired():
                return self._finish("error", timed_out=True)
            seen = len(self.context.events)
            try:
                fitted = self.context.fit(session.messages)
            except BudgetExceeded as exc:
                return self._finish("budget_exceeded", error_note=str(exc))
            for event in self.context.events[seen:]:
                session.record("compaction", **event.model_dump())
            started = self._clock()
            try:
                response = self.provider.complete(fitted, specs, timeout_s=self._remaining())
            except ProviderError as exc:
                if self._expired():
                    # The time ran out waiting for the model, not in the agent's own work:
                    # nothing was learnt about the task, so this is the harness's error.
                    return self._finish("error", timed_out=True, error=f"{MODEL_DEADLINE} ({exc})")
                return self._finish("error", error=str(exc))
            session.record(
                "model_call",
                input_tokens=response.usage.input_tokens,
                output_tokens=response.usage.output_tokens,
                latency_s=round(self._clock() - started, 6),
                model=response.model or self.provider.model,
                estimated=response.estimated,
            )
            session.append(response.message)
            if not response.message.tool_calls:
                stop = response.stop_reason if response.stop_reason != "tool_use" else "end_turn"
                return self._finish(stop)
            self._run_calls(response.message.tool_calls, settling=False)
            if self.on_step is not None:
                self.on_step(summarise(session, "tool_use"))

    def _finish(self, stop: StopReason, **extra: Any) -> RunResult:
        note = extra.pop("error_note", "")
        self.session.set_status(stop)
        result = summarise(self.session, stop, **extra)
        if note and not result.error:
            result.final_text = result.final_text or note
        return result

    # --- tool calls ----------------------------------------------------------------------

    def _settle(self) -> None:
        """Finish the interrupted batch before anything else (task-format.md §5)."""
        pending = pending_calls(self.session.messages)
        if pending:
            self._run_calls(pending, settling=True)

    def _run_calls(self, calls: list[ToolCall], *, settling: bool) -> None:
        for call in calls:
            if self._expired() or self._cancelled():
                why = "cancelled" if self._cancelled() else "the run's deadline passed"
                result = ToolResult(call_id=call.id, content=f"not run: {why}", is_error=True)
                self.session.append(Message(role="tool", tool_result=result))
                continue
            result, executed = self._execute(call, settling=settling)
            self.session.append(Message(role="tool", tool_result=result))
            if executed:
                self.session.record("tool_call", tool=call.name, is_error=result.is_error)

    def _execute(self, call: ToolCall, *, settling: bool) -> tuple[ToolResult, bool]:
        """Run one call; the flag says whether it reached the tool (and counts as a call)."""
        if INVALID_ARGUMENTS_KEY in call.arguments:
            raw = str(call.arguments[INVALID_ARGUMENTS_KEY])[:200]
            return self._error(call, f"the arguments are not a JSON object: {raw}"), False
        decision, reason = self.policy.check(call.name, call.arguments)
        if decision is not Decision.ALLOW:
            self.session.record("denied", tool=call.name, call_id=call.id, reason=reason)
            return self._error(call, f"permission denied: {reason}"), False
        tool = self.tools.get(call.name)
        if tool is None:
            known = ", ".join(self.tools)
            return self._error(call, f"unknown tool {call.name!r}; the tools are {known}"), False
        if settling and not tool.idempotent:
            self.session.record("unsettled", tool=call.name, call_id=call.id)
            return self._error(call, UNSETTLED.format(tool=call.name)), False
        index = len(self.session.events_of("tool_call"))
        if self.crash is not None:
            self.crash.before(index)
        remaining = self._remaining()
        timeout = self.tool_timeout_s if remaining is None else min(self.tool_timeout_s, remaining)
        try:
            result = ToolResult(
                call_id=call.id,
                content=tool(call.arguments, self.workspace, timeout_s=max(timeout, 0.1)),
            )
        except ToolError as exc:
            result = self._error(call, str(exc))
        except SandboxError:
            raise  # the sandbox itself failed or was killed: the runner says whose fault it is
        except Exception as exc:
            # Whatever the agent made (a tree, a file, a name) must not become the harness's
            # error: an errored run leaves the pass rate, so a run that could crash a tool
            # could leave it at will. The model is told; the run goes on.
            result = self._error(call, f"the {call.name} tool failed: {type(exc).__name__}: {exc}")
        if self.crash is not None:
            self.crash.after(index)
        return result, True

    @staticmethod
    def _error(call: ToolCall, text: str) -> ToolResult:
        return ToolResult(call_id=call.id, content=text, is_error=True)
