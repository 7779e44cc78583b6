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
Offer = Literal["mandatory-assertions", "create-init"]
"""An editor action a rule's findings are answered by, beside the fix a finding carries:
``mandatory-assertions`` (append the authoring guide's missing graders to task.json),
``create-init`` (create the empty ``__init__.py`` the finding is about). A rule declares the
actions its findings offer, so the editor holds no rule codes (:mod:`endstate_author.assist`
asks :func:`offering`)."""


@dataclass(frozen=True)
class Rule:
    code: str
    name: str
    severity: Severity
    scope: Scope
    func: Callable[..., Iterable[Diagnostic]] | None
    doc: str
    offers: tuple[Offer, ...] = ()
    """The editor actions its findings offer (:data:`Offer`)."""

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
    code: str,
    name: str,
    severity: Severity = "error",
    *,
    scope: Scope = "task",
    offers: tuple[Offer, ...] = (),
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def register(func: Callable[..., Any]) -> Callable[..., Any]:
        if code in RULES:
            raise RuntimeError(f"rule code {code} registered twice")
        RULES[code] = Rule(code, name, severity, scope, func, inspect.getdoc(func) or "",
                           offers)
        return func

    return register


def document(
    code: str, name: str, doc: str, severity: Severity = "error", *, scope: Scope = "prove"
) -> None:
    """Register a code that is emitted elsewhere: by prove's checks (``scope="prove"``), or
    by lint itself rather than a rule of its own (the internal ES000, ``scope="task"``)."""
    if code in RULES:
        raise RuntimeError(f"rule code {code} registered twice")
    RULES[code] = Rule(code, name, severity, scope, None, inspect.cleandoc(doc))


def offering(offer: Offer) -> frozenset[str]:
    """The codes whose rules declare ``offer``: the findings that action answers (the rule
    families must be loaded: :mod:`endstate_author.rules.registry`)."""
    return frozenset(code for code, found in RULES.items() if offer in found.offers)


def found_by_prove(code: str) -> bool:
    """``code`` is a finding of prove's checks, not one of lint's that prove repeats (a
    proof repeats lint's findings for a task that does not load, and its static warnings):
    what an editor merges from a proof beside its own lint of the buffer."""
    found = RULES.get(code)
    return found is not None and found.scope == "prove"


def default_severity(code: str) -> Severity:
    """The severity ``code`` was declared with; "error" for a code not (yet) registered."""
    found = RULES.get(code)
    return found.severity if found else "error"
