"""Diagnostics from the real server process: exact ranges, versions, errors."""

from __future__ import annotations

from tests.lsp.conftest import Session, initialize, manifest_text, rng
from tests.rules.conftest import GOOD_MANIFEST


async def test_sound_task_has_no_errors(session: Session) -> None:
    await initialize(session.client)
    root = session.task()
    _uri, diags = await session.open(root)
    assert [d for d in diags if d.severity == 1] == []


async def test_es101_unknown_key_exact_range(session: Session) -> None:
    await initialize(session.client)
    data = dict(GOOD_MANIFEST)
    data["max_step"] = 5
    root = session.task(data)
    text = manifest_text(data)
    _uri, diags = await session.open(root, text)
    [d] = [d for d in diags if d.code == "ES101"]
    line = (
        text.splitlines().index('  "max_step": 5,')
        if '  "max_step": 5,' in text.splitlines()
        else None
    )
    lines = text.splitlines()
    line = next(i for i, t in enumerate(lines) if '"max_step"' in t)
    col = lines[line].index('"max_step"')
    assert rng(d) == (line, col, line, col + len('"max_step"'))
    assert d.severity == 1
    assert "max_steps" in d.message


async def test_a_control_character_in_a_string_says_what_and_where(session: Session) -> None:
    """The decoder's "Invalid control character at" lost its position in the message; the
    finding names the character and its escape, at the character, as lint's CLI does."""
    await initialize(session.client)
    data = dict(GOOD_MANIFEST)
    data["description"] = "DESC"
    root = session.task(data)
    text = manifest_text(data).replace("DESC", "one\ttwo")
    _uri, diags = await session.open(root, text)
    [d] = [d for d in diags if d.code == "ES001"]
    lines = text.splitlines()
    line = next(i for i, t in enumerate(lines) if "\t" in t)
    col = lines[line].index("\t")
    assert rng(d) == (line, col, line, col + 1)
    assert "a raw tab inside a string" in d.message and "\\t" in d.message, d.message
    assert " at;" not in d.message, d.message
    broken = text.replace('"one\ttwo"', '"one\n  two"')  # a string left open at a line end
    diags = await session.replace(_uri, broken)
    [d] = [d for d in diags if d.code == "ES001"]
    assert "a line break inside a string: close the string" in d.message, d.message
    assert d.range.start.line == line
