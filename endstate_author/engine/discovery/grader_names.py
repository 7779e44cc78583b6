"""Which graders run tests (``command_succeeds``, ``tests_pass``, ``judged_tests``: the records
that say so in :data:`endstate_harness.graders.names.GRADERS`), by name.

:func:`grader_command` turns one grader entry into the :class:`TestCommand` it runs (None for
any other grader), so the rules ask one question whatever the spelling of the grader's name.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from typing import Any

from endstate_author.engine.discovery.command import TestCommand, from_tests_pass, parse_command
from endstate_harness.graders.names import (
    COMMAND_GRADERS,
    LIBRARY,
    REFERENCE_MODULE,
    REFERENCE_NAMES,
    TEST_GRADERS,
    THIS_MODULE,
    VENDORED_GRADERS,
)

HARNESS_MODULE = THIS_MODULE
HARNESS_NAMES = frozenset(LIBRARY)
"""Every grader of ``endstate_harness.graders``, from the harness's own records."""
VENDOR_MARKER = "# endstate-author-vendor:"
"""How the second line of a module ``endstate-author vendor`` wrote starts (its header)."""
VENDOR_MODULE = "endstate_vendor.graders"
"""Where ``endstate-author vendor`` writes the vendored graders (``VENDORED_GRADERS``) into a
suite (:mod:`endstate_author.vendoring`): the same graders, so the same rules apply to them."""


@functools.lru_cache(maxsize=4096)
def split_grader(name: str) -> tuple[str, str] | None:
    """``module:function`` (or last-dot ``module.function``) into its parts; None unless both
    are (dotted) Python identifiers, so a name like ``../x`` never turns into a file path."""
    module, sep, func = name.partition(":")
    if not sep:
        module, _, func = name.rpartition(".")
    module, func = module.strip(), func.strip()
    if not func.isidentifier() or not all(part.isidentifier() for part in module.split(".")):
        return None
    return module, func


@functools.lru_cache(maxsize=4096)
def builtin_name(name: str) -> str | None:
    """The short name of a library grader (``command_succeeds``), None for a suite grader.

    ``endstate.evals.graders`` offers the reference library; ``endstate_harness.graders``
    the same plus this toolkit's own, whose vendored ones a vendored suite names
    ``endstate_vendor.graders:…``. A name in neither is a suite grader (or a typo: ES202).
    """
    parts = split_grader(name)
    if parts is None:
        return None
    module, func = parts
    if module == REFERENCE_MODULE and func in REFERENCE_NAMES:
        return func
    if module == HARNESS_MODULE and func in HARNESS_NAMES:
        return func
    if module == VENDOR_MODULE and func in VENDORED_GRADERS:
        return func
    return None


def judged_pythons(graders: Iterable[tuple[str, Mapping[str, Any]]]) -> set[str]:
    """The interpreters (``python`` argument, ``python3`` by default) of the ``judged_tests``
    graders among ``(name, args)`` pairs: the judge's children prove starts ahead."""
    return {str(args.get("python", "python3")) for name, args in graders
            if builtin_name(name) == "judged_tests" and isinstance(args, Mapping)}


def grader_command(name: str, args: Mapping[str, Any]) -> TestCommand | None:
    """The test command a grader runs: parsed for ``command_succeeds``, derived for
    ``tests_pass``; None for any other grader (or a command that is not a string)."""
    short = builtin_name(name)
    if short in COMMAND_GRADERS:
        command = args.get("command")
        return parse_command(command) if isinstance(command, str) else None
    if short in TEST_GRADERS:
        return from_tests_pass(args)
    return None
