"""The check groups of prove, one module each; :data:`GROUPS` lists them in the order they run
(each module declares its ``GROUP``; the planner, skip notes, cache and ``--only`` read this).

Each group's module is imported the first time its ``GROUP`` is read, not with this package.
Why: the planner is a generator that the pool drains as it plans, so the first checks run
while the later groups are still being planned; with every module imported up front, prove's
first check waited for the imports of all of them (the mutants' generator and cache, the
probe catalogue, lint's context for the visible tests: ~0.1 s on one core, while the judge's
warm interpreters were ready and idle). A group's name is its module's name, so ``--only``
and :data:`CHECK_GROUPS` need none of them (a test holds the two lists together).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping, Sequence
from typing import overload

from endstate_author.prove.model import CheckGroup

CHECK_GROUPS: tuple[str, ...] = (
    "directions",
    "holdout",
    "defects",
    "oracle",
    "guards",
    "probes",
    "visible",
    "witness",
    "mutants",
)
"""The groups in the order they run; each is the name of its module in this package."""


def group(name: str) -> CheckGroup:
    """The ``GROUP`` that module ``name`` of this package declares (imported on first use)."""
    if name not in CHECK_GROUPS:
        raise KeyError(name)
    declared: CheckGroup = importlib.import_module(f"{__name__}.{name}").GROUP
    return declared


class _Groups(Sequence[CheckGroup]):
    """:data:`CHECK_GROUPS`' groups, each module imported as the reader reaches it."""

    @overload
    def __getitem__(self, index: int) -> CheckGroup: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[CheckGroup]: ...

    def __getitem__(self, index: int | slice) -> CheckGroup | Sequence[CheckGroup]:
        if isinstance(index, slice):
            return tuple(group(name) for name in CHECK_GROUPS[index])
        return group(CHECK_GROUPS[index])

    def __len__(self) -> int:
        return len(CHECK_GROUPS)


class _ByName(Mapping[str, CheckGroup]):
    """Group by name; a module is imported only when its group is asked for."""

    def __getitem__(self, name: str) -> CheckGroup:
        return group(name)

    def __iter__(self) -> Iterator[str]:
        return iter(CHECK_GROUPS)

    def __len__(self) -> int:
        return len(CHECK_GROUPS)


GROUPS: Sequence[CheckGroup] = _Groups()
BY_NAME: Mapping[str, CheckGroup] = _ByName()
