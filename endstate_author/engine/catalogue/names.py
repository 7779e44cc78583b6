"""Grader names: ``module:function`` split and spelled one way, and which names are built-in."""

from __future__ import annotations

from endstate_harness.graders.names import LIBRARY, REFERENCE_MODULE, REFERENCE_NAMES, THIS_MODULE


def split_name(name: str) -> tuple[str, str] | None:
    """(module, function) of ``module:function`` or last-dot ``module.function``; None if
    the name has neither shape, or its parts are not Python identifiers.

    Same split as the harness (a colon first, else the last dot), plus the identifier check
    the harness leaves to the import (which then fails with a less helpful message).
    """
    module, sep, attribute = name.partition(":")
    if not sep:
        module, _, attribute = name.rpartition(".")
    if not module or not attribute or ":" in attribute:
        return None
    if not attribute.isidentifier() or not all(p.isidentifier() for p in module.split(".")):
        return None
    return module, attribute


def canonical_name(name: str) -> str | None:
    """One spelling per grader (for ES210): colon form, endstate alias mapped to the harness."""
    parts = split_name(name)
    if parts is None:
        return None
    module, attribute = parts
    if module in (reference_module(), this_module()) and attribute in builtin_table():
        return f"{this_module()}:{attribute}"
    return f"{module}:{attribute}"


# ----- the harness's grader library (its table only: no grader is imported) ------------------


def reference_module() -> str:
    return REFERENCE_MODULE


def this_module() -> str:
    return THIS_MODULE


def builtin_table() -> dict[str, str]:
    """Every grader of ``endstate_harness.graders``: short name -> the module defining it."""
    return dict(LIBRARY)


def reference_table() -> dict[str, str]:
    """The graders ``endstate.evals.graders`` offers too, as :func:`builtin_table` has them."""
    return {name: LIBRARY[name] for name in sorted(REFERENCE_NAMES)}
