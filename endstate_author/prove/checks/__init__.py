"""The check groups of prove, one module each; :data:`GROUPS` lists them in the order they run
(each module declares its ``GROUP``; the planner, skip notes, cache and ``--only`` read this)."""

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
