"""What a sandbox command is and gets: its result, its default limits and its environment.

Kept apart from :mod:`endstate_harness.sandbox.base` (which re-exports every name) so that
module stays about trees and the sandbox's interface.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ExecResult:
    """What a command run in the sandbox did."""

    exit_code: int
    stdout: str = ""
    stderr: str = ""
    timed_out: bool = False

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out

    @property
    def output(self) -> str:
        return "\n".join(part for part in (self.stdout, self.stderr) if part)


DEFAULT_TIMEOUT_S = 120.0
"""How long a command may run when the caller gives no timeout (the reference's default)."""

OUTPUT_CAP_BYTES = 1 << 20
"""Per stream: a chatty command cannot eat the harness's memory; the rest is counted, dropped."""

COMMAND_ENV: dict[str, str] = {
    # Byte-compilation writes __pycache__ into the tree being graded; hash randomisation makes
    # anything that iterates a set differ between two runs of the same end state.
    "PYTHONDONTWRITEBYTECODE": "1",
    "PYTHONHASHSEED": "0",
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
}
"""The variables every sandbox command gets besides PATH and HOME; nothing else is inherited,
so a grade cannot depend on the host's environment (or leak its secrets to the agent)."""


def cap_output(data: bytes, dropped: int) -> str:
    """Decode captured output, noting how much was dropped past the cap."""
    text = data.decode("utf-8", errors="replace")
    if dropped:
        text += f"\n[endstate: output truncated, {dropped} more bytes dropped]"
    return text
