"""Killing a run on purpose, so that resume is tested rather than assumed."""

from __future__ import annotations

from dataclasses import dataclass

from endstate_harness.task import Recovery


class KilledRun(BaseException):
    """The simulated death of the agent process at a tool call."""

    def __init__(self, call_index: int, after_side_effect: bool) -> None:
        when = "after its side effect" if after_side_effect else "before it ran"
        super().__init__(f"killed at tool call {call_index}, {when}")
        self.call_index = call_index
        self.after_side_effect = after_side_effect


@dataclass(frozen=True)
class CrashPlan:
    """Where to die: the loop asks before and after each tool call."""

    crash_at_call: int
    after_side_effect: bool = False

    @classmethod
    def from_recovery(cls, recovery: Recovery) -> CrashPlan:
        return cls(recovery.crash_at_call, recovery.after_side_effect)

    def before(self, call_index: int) -> None:
        if call_index == self.crash_at_call and not self.after_side_effect:
            raise KilledRun(call_index, after_side_effect=False)

    def after(self, call_index: int) -> None:
        if call_index == self.crash_at_call and self.after_side_effect:
            raise KilledRun(call_index, after_side_effect=True)
