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

DEFAULT_HASH_SEED = "0"
"""The hash seed of every command unless a run asks for another: the task format's (§4), so
a task graded by endstate 0.3.0 and here sees the same set and dict-of-set orders."""


def hash_seed_value(seed: int | str) -> str:
    """``seed`` as ``PYTHONHASHSEED`` takes it (0 to 4294967295). Raises ValueError else."""
    text = str(seed).strip()
    if not text.isdigit() or int(text) > 4294967295:
        raise ValueError(f"a hash seed is a whole number from 0 to 4294967295, not {seed!r}")
    return str(int(text))


def seeded_env(hash_seed: str = DEFAULT_HASH_SEED) -> dict[str, str]:
    """:data:`COMMAND_ENV` with ``hash_seed`` as ``PYTHONHASHSEED``."""
    return {**COMMAND_ENV, "PYTHONHASHSEED": hash_seed_value(hash_seed)}


def cap_output(data: bytes, dropped: int) -> str:
    """Decode captured output, noting how much was dropped past the cap."""
    text = data.decode("utf-8", errors="replace")
    if dropped:
        text += f"\n[endstate: output truncated, {dropped} more bytes dropped]"
    return text
