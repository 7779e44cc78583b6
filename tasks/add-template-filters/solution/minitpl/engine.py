"""``{{ name }}`` substitution with dotted lookups into nested dicts.

No loops, no conditionals and no code execution: templates are written by support staff
and must not be able to run anything.
"""

from __future__ import annotations

import re
from typing import Any

_PLACEHOLDER = re.compile(r"\{\{(.*?)\}\}")


class TemplateError(ValueError):
    """A template that cannot be rendered with the given context."""


_MISSING = object()


def lookup(context: dict[str, Any], dotted: str) -> Any:
    """Follow ``a.b.c`` through nested dicts; the module's private sentinel when absent."""
    value: Any = context
    for part in dotted.split("."):
        if not isinstance(value, dict) or part not in value:
            return _MISSING
        value = value[part]
    return value


_TEXT_FILTERS = {"upper": str.upper, "lower": str.lower, "strip": str.strip}


def _expand(expression: str, context: dict[str, Any]) -> str:
    name, *filters = (part.strip() for part in expression.split("|"))
    if not name:
        raise TemplateError("empty placeholder")
    value = lookup(context, name)
    for spec in filters:
        filter_name, _, argument = spec.partition(":")
        # endstate: equivalent m5eb9d44b the prompt spells filters `default:TEXT`; a space before the colon is outside the task
        filter_name = filter_name.strip()
        if filter_name == "default":
            if value is _MISSING or value is None or value == "":
                value = argument
        elif filter_name in _TEXT_FILTERS:
            if value is _MISSING:
                raise TemplateError(f"no value for {name!r}")
            value = _TEXT_FILTERS[filter_name](str(value))
        else:
            raise TemplateError(f"unknown filter {filter_name!r} in {{{{{expression}}}}}")
    if value is _MISSING:
        raise TemplateError(f"no value for {name!r}")
    return str(value)


def render(template: str, context: dict[str, Any]) -> str:
    """Replace every placeholder of ``template`` with its value from ``context``.

    Raises:
        TemplateError: a placeholder is empty or names a missing value.
    """
    return _PLACEHOLDER.sub(lambda match: _expand(match.group(1), context), template)
