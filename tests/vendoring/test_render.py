"""Rendering the vendored module's judge source."""

from __future__ import annotations

import pytest

from endstate_author.vendoring import render


def test_two_judge_modules_defining_one_name_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """The judge's modules become one source when vendored: a name two of them define would
    silently be the later one's there, so rendering refuses it."""
    texts = {"a.py": "class _Loader:\n    pass\n", "b.py": "def _Loader():\n    pass\n"}
    monkeypatch.setattr(render, "JUDGE_MODULES", ("a", "b"))
    monkeypatch.setattr(render, "_text", lambda _pkg, name: texts[name])
    with pytest.raises(RuntimeError, match="both define _Loader"):
        render.judge_source()
