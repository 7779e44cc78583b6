"""ES415 — the fixture already holds the answer: a copy, a backup or a patch of the solution.

Why a rule of its own: an agent lists the fixture before anything else, and a file there from
which the reference solution follows mechanically (``core.py.orig`` holding the fixed code, a
``fix.patch`` that ``git apply`` turns into the solution) makes the task a copy exercise; the
task passes prove (the graders judge the end state, which is right) and measures nothing
about the agent's ability. Found by comparing, never by guessing from names alone: a copy
counts when its text equals a file the solution changes, a patch when applying it to the
fixture yields such a file.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import PurePosixPath

from endstate_author.engine.context import TaskContext
from endstate_author.engine.declare import rule
from endstate_author.engine.diagnostics import Diagnostic
from endstate_harness.layout import FIXTURE_DIR, SOLUTION_DIR

MIN_ANSWER = 32
"""Characters (whitespace aside) below which a file says too little to give anything away:
an empty ``__init__.py`` or a one-line re-export is the same in many places by nature."""
PATCH_SUFFIXES = (".patch", ".diff", ".rej")
SNIFFED_SUFFIXES = ("", ".txt", ".md", ".orig", ".bak", ".old")
"""Names a patch may hide under; their text is read to see whether it is a unified diff."""
BACKUP_SUFFIXES = (".orig", ".bak", ".old", ".save", "~")
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def _norm(text: str) -> str:
    """Text as it reads: trailing spaces and blank lines at the end do not count."""
    return "\n".join(line.rstrip() for line in text.strip("\n").splitlines())


def _solution_changes(ctx: TaskContext) -> dict[str, str]:
    """rel -> normalised text of each text file the solution adds or changes."""
    out: dict[str, str] = {}
    fixture = ctx.files(FIXTURE_DIR)
    for rel, entry in ctx.files(SOLUTION_DIR).items():
        if entry.is_symlink:
            continue
        text = ctx.read_tree_text(SOLUTION_DIR, rel)
        if text is None:
            continue
        if rel in fixture and ctx.read_tree_bytes(FIXTURE_DIR, rel) == ctx.read_tree_bytes(
            SOLUTION_DIR, rel
        ):
            continue  # not a change (ES409's business)
        norm = _norm(text)
        if len("".join(norm.split())) >= MIN_ANSWER:
            out[rel] = norm
    return out


def _is_patch(text: str) -> bool:
    return bool(re.search(r"^(---|\+\+\+) \S", text, re.M)) and bool(
        re.search(r"^@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@", text, re.M))


def _patched_path(line: str) -> str | None:
    """The path a ``+++ b/x`` (or ``--- a/x``) line names, without git's ``a/``/``b/``."""
    name = line[4:].split("\t", 1)[0].strip()
    if name == "/dev/null" or not name:
        return None
    if name.startswith(("a/", "b/")):
        name = name[2:]
    return PurePosixPath(name).as_posix().lstrip("./") or None


def _apply(old: list[str], hunks: list[tuple[int, list[str]]]) -> list[str] | None:
    """``old`` with each hunk applied (its context and removed lines must be found: at the
    line the hunk names, else once anywhere), or None when one does not apply."""
    lines = list(old)
    shift = 0
    for start, body in hunks:
        before = [b[1:] for b in body if b[:1] in (" ", "-")]
        after = [b[1:] for b in body if b[:1] in (" ", "+")]
        at = max(start - 1 + shift, 0) if before else max(start + shift, 0)
        if lines[at:at + len(before)] != before:
            places = [i for i in range(len(lines) - len(before) + 1)
                      if lines[i:i + len(before)] == before]
            if len(places) != 1:
                return None
            at = places[0]
        lines[at:at + len(before)] = after
        shift += len(after) - len(before)
    return lines


def _patch_results(text: str, fixture_text: dict[str, str | None]) -> dict[str, str]:
    """path -> the text applying ``text`` (a unified diff) to the fixture gives, per file."""
    results: dict[str, str] = {}
    sections: list[tuple[str | None, str | None, list[tuple[int, list[str]]]]] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "):
            sections.append((_patched_path(line), _patched_path(lines[i + 1]), []))
            i += 2
            continue
        found = _HUNK.match(line)
        if found and sections:
            body: list[str] = []
            i += 1
            while i < len(lines) and lines[i][:1] in (" ", "+", "-", "\\", ""):
                if lines[i].startswith(("--- ", "+++ ")) and i + 1 < len(lines) and (
                    lines[i + 1].startswith("+++ ") or _HUNK.match(lines[i + 1])
                ):
                    break
                if not lines[i].startswith("\\"):
                    body.append(lines[i] if lines[i] else " ")
                i += 1
            sections[-1][2].append((int(found.group(1)), body))
            continue
        i += 1
    for old_path, new_path, hunks in sections:
        target = new_path or old_path
        if target is None or not hunks:
            continue
        base = "" if old_path is None else _in_fixture(old_path, fixture_text)
        if base is None:
            continue  # a patch of a file the fixture does not have: nothing it yields
        applied = _apply(base.splitlines(), hunks)
        if applied is not None:
            results[target] = "\n".join(applied)
    return results


def _in_fixture(path: str, fixture_text: dict[str, str | None]) -> str | None:
    """The fixture text a patch's path names, leading folders it was made above dropped
    (``fixture/units/convert.py`` is ``units/convert.py``)."""
    parts = path.split("/")
    for cut in range(len(parts)):
        text = fixture_text.get("/".join(parts[cut:]))
        if text is not None:
            return text
    return None


def _same_file(patched: str, changed: dict[str, str]) -> str | None:
    """The solution file a patched path names (exactly, or the one whose path ends it)."""
    if patched in changed:
        return patched
    ends = [rel for rel in changed if patched.endswith("/" + rel) or rel.endswith("/" + patched)]
    return ends[0] if len(ends) == 1 else None


@rule("ES415", "fixture-holds-the-answer")
def fixture_holds_the_answer(ctx: TaskContext) -> Iterator[Diagnostic]:
    """The fixture already holds the answer: a copy, a backup or a patch of the solution.

    ## What it checks
    Every text file the solution adds or changes (over 32 characters) against the
    fixture's other files: a file with the same text under another name (a backup
    `*.orig`, `*.bak`, `*.old`, `*~`; or any copy of a file the solution changes — a file
    the solution adds may be a move, as in a rename task), and a patch or diff (`*.patch`, `*.diff`,
    `*.rej`, or a text file that is a unified diff) whose application to the fixture
    yields the solution's text for a file.

    ## Why it matters
    The agent reads the fixture first. When the answer is there to copy or apply, every
    run that notices passes, and the task measures whether the agent lists files, not
    whether it can do the work.

    ## Example
    `fixture/units/convert.py.orig` holding the fixed converter; `fixture/fix.patch` left
    over from writing the solution.

    ## Fix
    Delete the file from fixture/ (keep it outside the task, or in solution/).
    """
    changed = _solution_changes(ctx)
    if not changed:
        return
    fixture = ctx.files(FIXTURE_DIR)
    by_text: dict[str, list[str]] = {}
    for rel, norm in changed.items():
        by_text.setdefault(norm, []).append(rel)
    sizes = [len(norm) for norm in changed.values()]
    low, high = min(sizes) // 2, max(sizes) * 2 + 64
    texts: dict[str, str | None] = {}
    for rel, entry in sorted(fixture.items()):
        if entry.is_symlink:
            continue
        suffix = PurePosixPath(rel).suffix
        is_patch_name = rel.endswith(PATCH_SUFFIXES)
        sniff = suffix in SNIFFED_SUFFIXES or rel.endswith("~")
        if not (low <= entry.size <= high or is_patch_name or sniff):
            continue
        text = ctx.read_tree_text(FIXTURE_DIR, rel)
        if text is None:
            continue
        # a file the solution adds may be a move of this one (a rename task): a copy counts
        # then only under a backup's name; a file the solution changes has its answer here
        backup = rel.endswith(BACKUP_SUFFIXES)
        copies = [s for s in by_text.get(_norm(text), [])
                  if s != rel and (backup or s in fixture)]
        if copies:
            yield ctx.at_file(
                "ES415",
                f"fixture/{rel} holds the solution's {', '.join(copies)} word for word: the "
                "agent can copy the answer (delete it from fixture/)",
                entry.path,
            )
            continue
        if (is_patch_name or sniff) and _is_patch(text):
            if not texts:
                texts = {r: ctx.read_tree_text(FIXTURE_DIR, r) for r in fixture}
            given = []
            for path, result in _patch_results(text, texts).items():
                target = _same_file(path, changed)
                if target is not None and _norm(result) == changed[target]:
                    given.append(target)
            if given:
                yield ctx.at_file(
                    "ES415",
                    f"fixture/{rel} is a patch that turns the fixture into the solution's "
                    f"{', '.join(sorted(set(given)))}: the agent can apply the answer (delete "
                    "it from fixture/)",
                    entry.path,
                )
