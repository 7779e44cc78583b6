"""The check groups of prove, one module each; :data:`GROUPS` lists them in the order they run.

Each module ends with ``GROUP``, a :class:`~endstate_author.prove.model.CheckGroup` that declares
its name, the codes its findings carry, the parts of the task folder its checks read, how it
plans its checks (``jobs``) and why it skips (``skipped``). The planner, the skip notes, the
per-check cache and ``prove --only`` read this one list: a new group is a new module here and
one line below.
"""

from __future__ import annotations

from endstate_author.prove.checks import (
    defects,
    directions,
    guards,
    holdout,
    mutants,
    oracle,
    probes,
    visible,
    witness,
)
from endstate_author.prove.model import CheckGroup

GROUPS: tuple[CheckGroup, ...] = (
    directions.GROUP,
    holdout.GROUP,
    defects.GROUP,
    oracle.GROUP,
    guards.GROUP,
    probes.GROUP,
    visible.GROUP,
    witness.GROUP,
    mutants.GROUP,
)
CHECK_GROUPS: tuple[str, ...] = tuple(group.name for group in GROUPS)
BY_NAME: dict[str, CheckGroup] = {group.name: group for group in GROUPS}
