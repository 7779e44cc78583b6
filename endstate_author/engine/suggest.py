"""Did-you-mean: the nearest known name to a typo, for keys, categories, graders and args."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence

_ALIASES = {
    "minimum": "min",
    "maximum": "max",
    "minimal": "min",
    "maximal": "max",
    "lower": "min",
    "upper": "max",
}


def closest(word: str, options: Iterable[str], cutoff: float = 0.6) -> list[str]:
    """Known names close to ``word``, best first (an exact alias wins outright)."""
    pool = list(dict.fromkeys(options))
    if not pool:
        return []
    stripped = word.strip()
    if stripped != word and stripped in pool:
        return [stripped]
    lowered = {o.lower(): o for o in pool}
    if word.lower() in lowered:
        return [lowered[word.lower()]]
    alias = _ALIASES.get(word.lower())
    if alias in pool:
        return [alias]  # type: ignore[list-item]
    normalized = word.lower().replace("-", "_").replace(" ", "_")
    for option in pool:
        if option.lower().replace("-", "_") == normalized:
            return [option]
    return difflib.get_close_matches(word, pool, n=3, cutoff=cutoff)


def unique_suggestion(word: str, options: Iterable[str]) -> str | None:
    """The one suggestion safe to apply automatically, or None when it is ambiguous."""
    pool = list(dict.fromkeys(options))
    found = closest(word, pool)
    if len(found) == 1:
        return found[0]
    if len(found) > 1:
        scores = [difflib.SequenceMatcher(None, word, f).ratio() for f in found]
        if scores[0] - scores[1] >= 0.15:
            return found[0]
    return None


def suggestion_phrase(found: Sequence[str]) -> str:
    """``"; did you mean 'a' or 'b'?"`` for known suggestions, "" for none."""
    if not found:
        return ""
    return "; did you mean " + " or ".join(repr(f) for f in found[:3]) + "?"


def did_you_mean(word: str, options: Iterable[str]) -> str:
    """A ready-made message suffix: ``"; did you mean 'min'?"`` or ""."""
    return suggestion_phrase(closest(word, options))
