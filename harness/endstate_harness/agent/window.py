"""The context budget and compaction: the oldest whole turns are dropped when the
conversation exceeds the usable context, and each compaction is recorded as an event.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pydantic import BaseModel

from endstate_harness.agent.messages import Message, estimate_tokens
from endstate_harness.task import Budget


class CompactionEvent(BaseModel):
    """One compaction: how much it reclaimed and what it cost."""

    tokens_before: int
    tokens_after: int
    messages_before: int
    messages_after: int


class BudgetExceeded(Exception):
    """Even the pinned messages plus the newest turn do not fit: the run cannot continue."""


def _turns(messages: list[Message]) -> list[list[Message]]:
    """Group messages so that tool results stay with the assistant turn that asked for them."""
    groups: list[list[Message]] = []
    for message in messages:
        if message.role == "tool" and groups and groups[-1][0].role == "assistant":
            groups[-1].append(message)
        else:
            groups.append([message])
    return groups


@dataclass
class ContextManager:
    """Fits a conversation into the budget before every model call.

    ``budget=None`` is the unlimited budget: nothing is ever dropped and no event is
    recorded, which is exactly the guard removed.
    """

    budget: Budget | None = field(default_factory=Budget)
    events: list[CompactionEvent] = field(default_factory=list)

    @property
    def usable_tokens(self) -> int | None:
        return None if self.budget is None else max(0, self.budget.usable_tokens)

    def fit(self, messages: list[Message]) -> list[Message]:
        """The messages to send: all of them, or the pinned head plus the newest turns.

        Raises:
            BudgetExceeded: the pinned messages and the newest turn alone are over budget;
                dropping that turn would make the model repeat it forever.
        """
        limit = self.usable_tokens
        before = estimate_tokens(messages)
        if limit is None or before <= limit:
            return messages
        rest = list(messages)
        pinned: list[Message] = []
        if rest and rest[0].role == "system":
            pinned.append(rest.pop(0))
        first_user = next((i for i, m in enumerate(rest) if m.role == "user"), None)
        if first_user is not None:
            pinned.append(rest.pop(first_user))
        kept: list[Message] = []
        used = estimate_tokens(pinned)
        for turn in reversed(_turns(rest)):
            cost = estimate_tokens(turn)
            if used + cost > limit:
                break
            kept = turn + kept
            used += cost
        if rest and not kept:
            raise BudgetExceeded(
                f"the context holds {before} estimated tokens; the task and the newest turn "
                f"alone need more than the {limit} usable"
            )
        if not rest and used > limit:
            raise BudgetExceeded(
                f"the system prompt and the task alone need {used} estimated tokens; "
                f"{limit} are usable"
            )
        # Keep the original order of the pinned messages relative to each other.
        fitted = [m for m in messages if any(m is p for p in pinned)] + kept
        self.events.append(
            CompactionEvent(
                tokens_before=before,
                tokens_after=estimate_tokens(fitted),
                messages_before=len(messages),
                messages_after=len(fitted),
            )
        )
        return fitted


def unlimited() -> ContextManager:
    """A context manager that never compacts: the guard-removal half of prove's check."""
    return ContextManager(budget=None)
