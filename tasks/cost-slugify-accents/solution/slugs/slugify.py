"""Turn a post title into a URL slug.

Slugs are ASCII on purpose: they end up in URLs, file names and log lines, where
non-ASCII text gets percent-encoded or mangled.
"""

from __future__ import annotations

import re
import unicodedata

_NOT_ALNUM = re.compile(r"[^a-z0-9]+")


def slugify(title: str, max_length: int = 60) -> str:
    """Lower-case ASCII words of ``title`` joined by single hyphens.

    A slug longer than ``max_length`` is cut at the last hyphen that fits, so no word is
    cut in half (a single overlong word is cut at ``max_length``).
    """
    text = unicodedata.normalize("NFKD", title)
    # endstate: equivalent m608cb01a encode("ascii", "ignore") leaves only ASCII bytes, which decode() reads as UTF-8 alike
    text = text.encode("ascii", "ignore").decode("ascii")
    slug = _NOT_ALNUM.sub("-", text.lower()).strip("-")
    if len(slug) <= max_length:
        return slug
    cut = slug.rfind("-", 0, max_length + 1)
    return slug[:cut] if cut > 0 else slug[:max_length]
