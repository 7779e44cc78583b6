"""Code actions on task.json: quick fixes, "fix all safe findings", and "add the missing
mandatory assertions".
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from endstate_author.assist.grader_views import REFERENCE_MODULE, short_name
from endstate_author.assist.paths import fixture_paths
from endstate_author.assist.vocabulary import MAX_DOCUMENT_BYTES
from endstate_author.engine.context import walk_tree
from endstate_author.engine.declare import Offer
from endstate_author.engine.diagnostics import Diagnostic, FileCreate, Fix, TextEdit
from endstate_author.engine.discovery import TEST_GRADERS
from endstate_author.engine.jsonpos import parse
from endstate_harness.graders.names import COMMAND_GRADERS
from endstate_harness.layout import SOLUTION_DIR, TASK_FILE


@dataclass(frozen=True)
class Action:
    """A code action: edits in byte offsets per file, files to create, the findings it fixes."""

    title: str
    kind: Literal["quickfix", "source.fixAll", "refactor.rewrite"]
    edits: tuple[TextEdit, ...] = ()
    creates: tuple[FileCreate, ...] = ()
    diagnostics: tuple[Diagnostic, ...] = ()
    preferred: bool = False


def _creatable(path: Path) -> bool:
    return not path.exists() and not path.is_symlink()


def offers(diag: Diagnostic, offer: Offer) -> bool:
    """The rule of ``diag`` declares that ``offer`` answers its findings
    (:data:`endstate_author.engine.declare.Offer`): the editor reads which findings an action
    applies to from the rules, never from codes of its own."""
    # every rule family (the task model with them, ~0.3 s) loads with the first lint, never
    # when the editor's analysis is imported (the language server's start): deferred
    from endstate_author.rules.registry import RULES

    found = RULES.get(diag.code)
    return found is not None and offer in found.offers


def fix_for(diag: Diagnostic) -> Fix | None:
    """The diagnostic's own fix, or the editor's: an empty ``__init__.py`` for a finding
    whose rule offers ``create-init``, about a file that is not there."""
    if diag.fix is not None:
        return diag.fix
    if offers(diag, "create-init") and diag.file.name == "__init__.py" and _creatable(diag.file):
        return Fix(
            f"create {diag.file.parent.name}/__init__.py", creates=(FileCreate(diag.file, ""),)
        )
    return None


def quick_fixes(diagnostics: Iterable[Diagnostic]) -> list[Action]:
    """Every fix a finding carries, as a quick fix attached to that finding."""
    out = []
    for diag in diagnostics:
        fix = fix_for(diag)
        if fix is None:
            continue
        creates = tuple(c for c in fix.creates if _creatable(c.file))
        if not fix.edits and not creates:
            continue
        out.append(Action(fix.title, "quickfix", fix.edits, creates, (diag,), preferred=fix.safe))
    return out


def fix_all(diagnostics: Sequence[Diagnostic]) -> Action | None:
    """``source.fixAll``: every *safe* fix that does not overlap another, as one action."""
    chosen: list[tuple[Diagnostic, Fix]] = []
    taken: dict[Path, list[tuple[int, int]]] = {}
    created: set[Path] = set()
    for diag in sorted(diagnostics, key=Diagnostic.sort_key):
        fix = fix_for(diag)
        if fix is None or not fix.safe:
            continue
        spans = [(e.file, e.start, e.end) for e in fix.edits]
        if any(
            (s < e2 and s2 < e) or s == s2 == e == e2
            for f, s, e in spans
            for s2, e2 in taken.get(f, [])
        ):
            continue
        if any(c.file in created or not _creatable(c.file) for c in fix.creates):
            continue
        for f, s, e in spans:
            taken.setdefault(f, []).append((s, e))
        created.update(c.file for c in fix.creates)
        chosen.append((diag, fix))
    if not chosen:
        return None
    return Action(
        title=f"Fix all safe findings ({len(chosen)})",
        kind="source.fixAll",
        edits=tuple(e for _, f in chosen for e in f.edits),
        creates=tuple(c for _, f in chosen for c in f.creates),
        diagnostics=tuple(d for d, _ in chosen),
    )


_TEST_FILE = re.compile(r"(^|/)(test_[^/]*|[^/]*_test)\.py$")


def mandatory_assertions(
    root: Path, data: bytes, diagnostics: Iterable[Diagnostic] = ()
) -> Action | None:
    """ "Add the missing mandatory assertions": append the guide's four graders that are absent.

    The action answers those of ``diagnostics`` (the document's findings) whose rule offers
    ``mandatory-assertions``.

    The four (authoring guide): run the tests (``command_succeeds`` or ``tests_pass``), pin
    the fixture's test files (``files_unchanged``), ``no_new_skips`` and
    ``changed_paths_within`` — the last three are implied by ``tree_unchanged``. Only
    offered when task.json is valid and ``graders`` is an array, so the insertion is exact.
    """
    if len(data) > MAX_DOCUMENT_BYTES:
        return None
    doc = parse(data)
    if doc.error is not None or doc.root is None or doc.root.kind != "object":
        return None
    graders = doc.root.get("graders")
    if graders is None or graders.kind != "array":
        return None
    names = set()
    for item in graders.items:
        node = item.get("name") if item.kind == "object" else None
        if node is not None and isinstance(node.value, str):
            names.add(short_name(node.value))
    files, _folders = fixture_paths(root)
    tests = [f for f in files if _TEST_FILE.search(f)]
    missing: list[dict[str, Any]] = []
    if not names & (COMMAND_GRADERS | TEST_GRADERS):
        command = "python -m unittest discover -s tests -t . -q"
        test_dirs = sorted({t.rsplit("/", 1)[0] for t in tests if "/" in t})
        if test_dirs and "tests" not in test_dirs:
            command = f"python -m unittest discover -s {test_dirs[0]} -t . -q"
        missing.append(
            {"name": f"{REFERENCE_MODULE}:command_succeeds", "args": {"command": command}}
        )
    if "tree_unchanged" not in names:
        if "files_unchanged" not in names and tests:
            missing.append(
                {"name": f"{REFERENCE_MODULE}:files_unchanged", "args": {"paths": tests}}
            )
        if "no_new_skips" not in names:
            missing.append({"name": f"{REFERENCE_MODULE}:no_new_skips"})
        if "changed_paths_within" not in names:
            missing.append(
                {
                    "name": f"{REFERENCE_MODULE}:changed_paths_within",
                    "args": {"allowed": _allowed_patterns(root, tests)},
                }
            )
    if not missing:
        return None
    insert_at, text = _array_append(data, graders, [json.dumps(m) for m in missing])
    manifest = root / TASK_FILE
    return Action(
        title="Add the missing mandatory assertions "
        f"({', '.join(short_name(m['name']) for m in missing)})",
        kind="quickfix",
        edits=(TextEdit(manifest, insert_at, insert_at, text),),
        diagnostics=tuple(d for d in diagnostics if offers(d, "mandatory-assertions")),
    )


def _allowed_patterns(root: Path, tests: list[str]) -> list[str]:
    """Folders the solution touches (as ``dir/*``), else the fixture's non-test top folders."""
    changed = [rel for rel, e in walk_tree(root / SOLUTION_DIR).items() if not e.is_dir]
    source = changed or [
        f for f in fixture_paths(root)[0] if f not in tests and not _TEST_FILE.search(f)
    ]
    patterns = sorted({(rel.split("/", 1)[0] + "/*") if "/" in rel else rel for rel in source})
    return patterns or ["*.md"]


def _array_append(data: bytes, array: Any, items: list[str]) -> tuple[int, str]:
    """Where and what to insert to append ``items`` to ``array``, matching its indentation."""
    close = array.end - 1
    if array.items:
        last = array.items[-1]
        line_start = data.rfind(b"\n", 0, last.start) + 1
        indent = data[line_start : last.start].decode("utf-8", errors="replace")
        if indent.strip():
            return last.end, "".join(f", {item}" for item in items)
        return last.end, "".join(f",\n{indent}{item}" for item in items)
    line_start = data.rfind(b"\n", 0, array.start) + 1
    base = re.match(rb"[ \t]*", data[line_start:]).group().decode()  # type: ignore[union-attr]
    inner = base + "  "
    body = ",\n".join(f"{inner}{item}" for item in items)
    return close, f"\n{body}\n{base}"
