"""Applying fixes: ``lint --fix`` and ``--diff``, and the editor's ``source.fixAll``."""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from endstate_author.engine.diagnostics import Diagnostic, FileCreate, Fix, TextEdit


@dataclass
class FixPlan:
    """What the safe fixes of one pass would change: new bytes per file, files created."""

    edits: dict[Path, bytes] = field(default_factory=dict)
    originals: dict[Path, bytes] = field(default_factory=dict)
    creates: dict[Path, str] = field(default_factory=dict)
    applied: list[tuple[Diagnostic, Fix]] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not self.edits and not self.creates


def _creatable(create: FileCreate) -> bool:
    path = create.file
    if path.is_symlink():
        return False
    if not path.exists():
        return True
    try:
        return path.is_file() and not path.read_bytes().strip()
    except OSError:
        return False


def splice(data: bytes, edits: Sequence[TextEdit]) -> bytes:
    for edit in sorted(edits, key=lambda e: e.start, reverse=True):
        data = data[: edit.start] + edit.new_text.encode("utf-8") + data[edit.end :]
    return data


def plan_fixes(diagnostics: Sequence[Diagnostic], *, include_unsafe: bool = False) -> FixPlan:
    plan = FixPlan()
    taken: dict[Path, list[tuple[int, int]]] = {}
    chosen: dict[Path, list[TextEdit]] = {}
    for diag in sorted(diagnostics, key=Diagnostic.sort_key):
        fix = diag.fix
        if fix is None or (not fix.safe and not include_unsafe):
            continue
        ranges = [(e.file, e.start, e.end) for e in fix.edits]
        clash = any(
            (s < e2 and s2 < e) or (s == s2 == e == e2)
            for f, s, e in ranges
            for s2, e2 in taken.get(f, [])
        )
        if clash or not all(_creatable(c) for c in fix.creates):
            continue
        if any(c.file in plan.creates for c in fix.creates):
            continue
        for f, s, e in ranges:
            taken.setdefault(f, []).append((s, e))
        for edit in fix.edits:
            chosen.setdefault(edit.file, []).append(edit)
        for create in fix.creates:
            plan.creates[create.file] = create.content
        plan.applied.append((diag, fix))
    for path, edits in chosen.items():
        original = path.read_bytes()
        plan.originals[path] = original
        plan.edits[path] = splice(original, edits)
    return plan


def write_plan(plan: FixPlan) -> None:
    for path, data in plan.edits.items():
        tmp = path.with_name(path.name + ".endstate-fix.tmp")
        tmp.write_bytes(data)
        tmp.replace(path)
    for path, content in plan.creates.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")


def render_diff(plan: FixPlan) -> str:
    chunks: list[str] = []
    for path, new in plan.edits.items():
        old = plan.originals[path].decode("utf-8", errors="replace").splitlines(keepends=True)
        chunks.extend(
            difflib.unified_diff(
                old,
                new.decode("utf-8", errors="replace").splitlines(keepends=True),
                fromfile=f"a/{path.as_posix()}",
                tofile=f"b/{path.as_posix()}",
            )
        )
    for path, content in plan.creates.items():
        if not content:  # an empty new file has no hunk, but it is a change all the same
            chunks += ["--- /dev/null\n", f"+++ b/{path.as_posix()}\n", "(new empty file)\n"]
            continue
        chunks.extend(
            difflib.unified_diff(
                [],
                content.splitlines(keepends=True),
                fromfile="/dev/null",
                tofile=f"b/{path.as_posix()}",
            )
        )
    return "".join(c if c.endswith("\n") else c + "\n" for c in chunks)
