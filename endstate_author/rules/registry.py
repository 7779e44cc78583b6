"""The rule registry: every rule family, loaded, and the table of rules they declared."""

from __future__ import annotations

import re

from endstate_author.engine.declare import RULES, Rule, Scope, document, rule
from endstate_author.rules import (  # noqa: F401  (importing a family registers its rules)
    es0_file,
    es1_manifest,
    es1_placeholders,
    es2_graders,
    es2_vendor,
    es3_assertions,
    es4_answer,
    es4_directory,
    es5_judge,
    es5_tests,
    es5_vacuous,
    es6_prompt,
    es9_prove,
)

__all__ = ["RULES", "Rule", "Scope", "all_rules", "document", "fix_line", "load_all", "rule"]


def all_rules() -> list[Rule]:
    return [RULES[c] for c in sorted(RULES)]


def load_all() -> None:
    """Every rule module is imported (so registered) with this module: nothing left to do.

    Kept so callers may still say, where they rely on it, that every rule is loaded."""


def fix_line(code: str) -> str:
    """The first sentence of the Fix section of the code's documentation (``rule CODE``):
    what lint's and prove's text output print under a finding."""
    rule = RULES.get(code)
    if rule is None:
        return ""
    found = re.search(r"^## Fix\s*\n(.*?)(?:\n## |\Z)", rule.doc, re.S | re.M)
    if not found:
        return ""
    text = " ".join(found.group(1).split())
    return re.split(r"(?<=[.!?])\s+(?=[A-Z`])", text, maxsplit=1)[0]
