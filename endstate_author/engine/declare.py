"""Declaring a rule: the ``@rule`` decorator, ``document()``, and the table they fill.

A rule's docstring is its documentation (``endstate-author rule CODE``, the editor, the docs
site); how to add one: CONTRIBUTING.md. This module imports neither the families nor lint.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal

from endstate_author.engine.diagnostics import Diagnostic, Severity

Scope = Literal["task", "suite", "prove"]


@dataclass(frozen=True)
class Rule:
    code: str
    name: str
    severity: Severity
    scope: Scope
    func: Callable[..., Iterable[Diagnostic]] | None
    doc: str

    @property
    def summary(self) -> str:
        """The doc's first paragraph as one line: a first sentence written over two lines
        of the docstring is whole, not cut where the docstring's line ended."""
        paragraph = self.doc.strip().split("\n\n", 1)[0]
        return " ".join(paragraph.split()) or self.name

    @property
    def family(self) -> str:
        return self.code[:3]


RULES: dict[str, Rule] = {}


def rule(
    code: str, name: str, severity: Severity = "error", *, scope: Scope = "task"
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def register(func: Callable[..., Any]) -> Callable[..., Any]:
        if code in RULES:
            raise RuntimeError(f"rule code {code} registered twice")
        RULES[code] = Rule(code, name, severity, scope, func, inspect.getdoc(func) or "")
        return func

    return register


def document(code: str, name: str, doc: str, severity: Severity = "error") -> None:
    """Register a code that is emitted elsewhere (prove's ES9, the internal ES000)."""
    if code in RULES:
        raise RuntimeError(f"rule code {code} registered twice")
    RULES[code] = Rule(code, name, severity, "prove", None, inspect.cleandoc(doc))


def default_severity(code: str) -> Severity:
    """The severity ``code`` was declared with; "error" for a code not (yet) registered."""
    found = RULES.get(code)
    return found.severity if found else "error"
