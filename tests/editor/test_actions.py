"""Code actions: quick fixes, fix-all and "add the missing mandatory assertions", no server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from endstate_author.assist import Action, fix_all, fix_for, mandatory_assertions, quick_fixes
from endstate_author.engine.diagnostics import Diagnostic, FileCreate, Fix, TextEdit

REF = "endstate.evals.graders"
DEFAULT_COMMAND = "python -m unittest discover -s tests -t . -q"


def finding(
    code: str, file: Path, fix: Fix | None = None, line: int = 1, severity: str = "error"
) -> Diagnostic:
    return Diagnostic(code, severity, f"{code} finding", file, line=line, fix=fix)  # type: ignore[arg-type]


def rename(file: Path, start: int, end: int, text: str, *, safe: bool = True) -> Fix:
    return Fix(f"rename to {text}", edits=(TextEdit(file, start, end, text),), safe=safe)


def apply(data: bytes, edits: tuple[TextEdit, ...]) -> bytes:
    for edit in sorted(edits, key=lambda e: e.start, reverse=True):
        data = data[: edit.start] + edit.new_text.encode() + data[edit.end :]
    return data


# ----- quick fixes ---------------------------------------------------------------------------


def test_each_fix_is_a_quick_fix_on_its_finding(root: Path) -> None:
    manifest = root / "task.json"
    safe = finding("ES101", manifest, rename(manifest, 1, 5, '"id"'))
    unsafe = finding("ES201", manifest, rename(manifest, 9, 12, "x", safe=False), line=2)
    bare = finding("ES102", manifest, line=3)
    assert quick_fixes([safe, bare, unsafe]) == [
        Action('rename to "id"', "quickfix", safe.fix.edits, (), (safe,), preferred=True),  # type: ignore[union-attr]
        Action("rename to x", "quickfix", unsafe.fix.edits, (), (unsafe,), preferred=False),  # type: ignore[union-attr]
    ]


def test_missing_init_py_is_created(root: Path) -> None:
    init = root / "fixture" / "pkg" / "__init__.py"
    diag = finding("ES406", init)
    create = Fix("create pkg/__init__.py", creates=(FileCreate(init, ""),))
    assert fix_for(diag) == create
    assert quick_fixes([diag]) == [
        Action("create pkg/__init__.py", "quickfix", (), create.creates, (diag,), preferred=True)
    ]


def test_no_fix_to_create_a_file_that_exists(root: Path) -> None:
    existing = root / "fixture" / "src" / "__init__.py"
    assert fix_for(finding("ES406", existing)) is None
    stale = Fix("create it", creates=(FileCreate(existing, ""),))
    assert quick_fixes([finding("ES999", existing, stale)]) == []


# ----- fix all -------------------------------------------------------------------------------


def test_fix_all_takes_safe_fixes_that_do_not_overlap(root: Path) -> None:
    """Findings are taken in order; a fix overlapping one already taken is left out."""
    manifest = root / "task.json"
    first = finding("ES101", manifest, rename(manifest, 10, 20, "a"), line=1)
    overlapping = finding("ES102", manifest, rename(manifest, 15, 25, "b"), line=2)
    unsafe = finding("ES103", manifest, rename(manifest, 30, 35, "c", safe=False), line=3)
    later = finding("ES104", manifest, rename(manifest, 40, 45, "d"), line=4)
    init = root / "fixture" / "pkg" / "__init__.py"
    create = finding("ES406", init)
    action = fix_all([later, unsafe, overlapping, create, first])
    assert action == Action(
        title="Fix all safe findings (3)",
        kind="source.fixAll",
        edits=(TextEdit(manifest, 10, 20, "a"), TextEdit(manifest, 40, 45, "d")),
        creates=(FileCreate(init, ""),),
        diagnostics=(create, first, later),  # in file, line order: fixture/… before task.json
    )


def test_fix_all_with_nothing_safe(root: Path) -> None:
    manifest = root / "task.json"
    assert fix_all([]) is None
    assert fix_all([finding("ES101", manifest, rename(manifest, 1, 2, "x", safe=False))]) is None


# ----- the mandatory assertions --------------------------------------------------------------

FILES_UNCHANGED = {"name": f"{REF}:files_unchanged", "args": {"paths": ["tests/test_app.py"]}}
NO_NEW_SKIPS = {"name": f"{REF}:no_new_skips"}
CHANGED_WITHIN = {"name": f"{REF}:changed_paths_within", "args": {"allowed": ["src/*"]}}
COMMAND = {"name": f"{REF}:command_succeeds", "args": {"command": DEFAULT_COMMAND}}


@pytest.mark.parametrize(
    ("graders", "added"),
    [
        (
            [{"name": f"{REF}:command_succeeds", "args": {"command": "x"}}],
            [FILES_UNCHANGED, NO_NEW_SKIPS, CHANGED_WITHIN],
        ),
        ([], [COMMAND, FILES_UNCHANGED, NO_NEW_SKIPS, CHANGED_WITHIN]),
        ([{"name": f"{REF}:tree_unchanged"}], [COMMAND]),
        (
            [{"name": "suite:tests_pass"}, {"name": f"{REF}:no_new_skips"}],
            [FILES_UNCHANGED, CHANGED_WITHIN],
        ),
    ],
)
def test_missing_assertions_are_appended(
    root: Path, graders: list[dict[str, object]], added: list[dict[str, object]]
) -> None:
    """The solution touches src/ only, so changed_paths_within allows src/*; the fixture's
    test file is pinned; the inserted text keeps the file valid and indented."""
    data = (json.dumps({"id": "x", "graders": graders}, indent=2) + "\n").encode()
    action = mandatory_assertions(root, data)
    assert action is not None
    names = ", ".join(str(a["name"]).split(":")[1] for a in added)
    assert (action.title, action.kind, action.creates) == (
        f"Add the missing mandatory assertions ({names})",
        "quickfix",
        (),
    )
    [edit] = action.edits
    assert edit.file == root / "task.json" and edit.start == edit.end
    fixed = apply(data, action.edits)
    assert json.loads(fixed)["graders"] == graders + added
    for item in added:  # each on its own line, indented like the array's items
        assert f"\n    {json.dumps(item)}".encode() in fixed


def test_insertion_point_and_text_exactly(root: Path) -> None:
    data = b'{"graders": [{"name": "endstate.evals.graders:tree_unchanged"}]}'
    action = mandatory_assertions(root, data)
    assert action is not None
    assert action.edits == (
        TextEdit(root / "task.json", data.index(b"}]") + 1, data.index(b"}]") + 1,
                 ", " + json.dumps(COMMAND)),
    )  # fmt: skip


@pytest.mark.parametrize(
    "data",
    [
        b'{"graders": [{"name": "a:tests_pass"}, {"name": "a:tree_unchanged"}]}',  # complete
        b'{"graders": [',  # invalid JSON: no exact insertion point
        b'{"graders": {}}',  # not an array
        b'{"id": "x"}',  # no graders at all
        b"[]",
    ],
)
def test_nothing_missing_or_nowhere_to_add(root: Path, data: bytes) -> None:
    assert mandatory_assertions(root, data) is None
