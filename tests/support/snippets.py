"""The fenced code blocks of the documentation, as the tests run them: verbatim."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```\s*$", re.M | re.S)


def fenced(doc: Path, lang: str, containing: str) -> str:
    """The one ``lang`` block of ``doc`` that contains ``containing``, byte for byte."""
    found = [
        body for tag, body in FENCE.findall(doc.read_text(encoding="utf-8"))
        if tag == lang and containing in body
    ]
    assert len(found) == 1, f"{doc}: {len(found)} ```{lang} blocks contain {containing!r}"
    return found[0]
