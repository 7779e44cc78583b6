"""The client's settings for this server, as one typed model."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, StrictBool, ValidationError
from pydantic.alias_generators import to_camel

from endstate_harness.sandbox.choice import DEFAULT_KIND, SandboxKind

SECTION = "endstate-author"
"""The configuration section a client keeps these settings under."""

SANDBOXES: tuple[str, ...] = tuple(kind.value for kind in SandboxKind)
"""What ``sandbox`` may say: what ``--sandbox`` of every command takes, passed to prove as
given (prove's one sandbox choice decides what ``auto`` is)."""

MAX_DEBOUNCE_MS = 10000


def _milliseconds(value: Any) -> int:
    """A number of milliseconds in [0, MAX_DEBOUNCE_MS]; a fraction is cut. Not a bool or a
    string: JSON ``true`` or ``"150"`` is a mistake worth a warning, not a number."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not 0 <= value <= MAX_DEBOUNCE_MS
    ):
        raise ValueError(f"not a number of milliseconds between 0 and {MAX_DEBOUNCE_MS}")
    return int(value)


PROBLEMS: dict[str, str] = {
    "trusted": "trusted must be true or false",
    "proveOnSave": "proveOnSave must be true or false",
    "debounceMs": f"debounceMs must be a number of milliseconds between 0 and {MAX_DEBOUNCE_MS}",
    "sandbox": "sandbox must be "
    + ", ".join(f'"{kind}"' for kind in SANDBOXES[:-1])
    + f' or "{SANDBOXES[-1]}"',
}
"""What is said about a rejected value, by key (each message starts with the key)."""


class Settings(BaseModel):
    """The client's settings (initializationOptions, then workspace/configuration).

    ``trusted``: the workspace may run suite code (the client decides; never a setting a
    workspace file can give itself). ``proveOnSave``: run prove when a task is saved (only
    when trusted). ``debounceMs``: wait this long after a keystroke before linting.
    ``sandbox``: where prove runs checks (``auto``, ``docker`` or ``local``).
    """

    model_config = ConfigDict(alias_generator=to_camel, extra="ignore")

    trusted: StrictBool = False
    prove_on_save: StrictBool = True
    debounce_ms: Annotated[int, BeforeValidator(_milliseconds)] = 150
    sandbox: SandboxKind = DEFAULT_KIND

    def update(self, raw: Any) -> list[str]:
        """Merge a settings object; returns one complaint per key whose value was ignored."""
        if not isinstance(raw, dict):
            return []
        if isinstance(raw.get(SECTION), dict):
            raw = raw[SECTION]
        fields = type(self).model_fields
        aliases = {name: info.alias or name for name, info in fields.items()}
        given = {alias: raw[alias] for alias in aliases.values() if alias in raw}
        try:
            parsed = type(self).model_validate(given)
            rejected: set[str] = set()
        except ValidationError as exc:
            rejected = {str(error["loc"][0]) for error in exc.errors() if error["loc"]}
            parsed = type(self).model_validate(
                {k: v for k, v in given.items() if k not in rejected}
            )
        for name, alias in aliases.items():
            if alias in given and alias not in rejected:
                setattr(self, name, getattr(parsed, name))
        return [PROBLEMS[alias] for alias in aliases.values() if alias in rejected]

    @property
    def may_prove(self) -> bool:
        """Prove (which imports and runs suite code) may start: trusted *and* proveOnSave."""
        return self.trusted and self.prove_on_save
