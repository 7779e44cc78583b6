"""The check groups are declared once, by their modules, and everything else reads that list."""

from __future__ import annotations

import importlib
import pkgutil

from endstate_author.cli.cmd_prove import Only
from endstate_author.prove import checks
from endstate_author.prove.checkcache import inputs_of
from endstate_author.prove.checks import BY_NAME, CHECK_GROUPS, GROUPS
from endstate_author.prove.model import CheckGroup
from endstate_author.rules.registry import RULES


def test_every_check_module_declares_its_group_and_is_listed() -> None:
    modules = [m.name for m in pkgutil.iter_modules(checks.__path__)]
    declared = []
    for name in modules:
        group = getattr(importlib.import_module(f"{checks.__name__}.{name}"), "GROUP", None)
        assert isinstance(group, CheckGroup), f"prove/checks/{name}.py declares no GROUP"
        declared.append(group)
    assert sorted(g.name for g in declared) == sorted(CHECK_GROUPS)
    assert all(BY_NAME[g.name] is g for g in declared)


def test_groups_are_unique_documented_and_read_known_parts() -> None:
    assert len(set(CHECK_GROUPS)) == len(GROUPS)
    parts = {"task.json", "fixture", "holdout", "solution", "graders", "defects", "prompt.md",
             "oracle.json", "suite-probes"}
    for group in GROUPS:
        assert group.codes and all(code in RULES for code in group.codes), group.name
        assert set(group.inputs) <= parts, group.name
        assert group.summary, group.name


def test_the_cli_and_the_cache_read_the_same_list() -> None:
    assert [o.value for o in Only] == list(CHECK_GROUPS)
    for group in GROUPS:
        assert inputs_of(group.name) == group.inputs
    # a group nobody declared reads everything, so its key changes with any part
    assert set(inputs_of("no-such-group")) >= {p for g in GROUPS for p in g.inputs}
