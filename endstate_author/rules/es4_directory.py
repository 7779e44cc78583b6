"""ES4 — the directory and its fixture.

These rules read the task folder, not (only) the manifest, so they run even when task.json
does not parse; a rule whose answer depends on the category stays silent until the manifest
is a valid object with a known category. Trees are listed without following symlinks.
"""

from __future__ import annotations

import ast
import os
import posixpath
import re
import sys
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path

from endstate_author.engine.astwalk import child_nodes
from endstate_author.engine.context import MAX_MANIFEST_BYTES, TaskContext, TreeEntry
from endstate_author.engine.declare import rule
from endstate_author.engine.diagnostics import Diagnostic, FileCreate, Fix
from endstate_author.engine.discovery import is_test_file_name, test_files
from endstate_author.engine.jsonpos import JNode
from endstate_author.rules.es3_assertions import test_commands
from endstate_harness.graders.pysource import UTF8, declared_encoding, is_python
from endstate_harness.layout import (
    CATEGORIES,
    DEFECTS_DIR,
    FIXTURE_DIR,
    HOLDOUT_DIR,
    PRUNED_NAMES,
    SOLUTION_DIR,
)

TREES = (FIXTURE_DIR, HOLDOUT_DIR, SOLUTION_DIR)
VCS_NAMES = (".git", ".hg", ".svn")
BIG_FILE = 1 << 20
BINARY_PROBE = 8192


def _category(ctx: TaskContext) -> str | None:
    """The category when the manifest is an object with a known one; None otherwise."""
    if not ctx.is_object:
        return None
    return ctx.category if ctx.category in CATEGORIES else None


def _category_node(ctx: TaskContext) -> JNode | None:
    return ctx.node(("category",))


def _is_pruned(rel: str) -> bool:
    return any(part in PRUNED_NAMES for part in rel.split("/"))


@rule("ES401", "no-fixture")
def no_fixture(ctx: TaskContext) -> Iterator[Diagnostic]:
    """The task has no fixture/ folder.

    ## What it checks
    A `fixture/` folder (a real folder, not a symlink) beside task.json.

    ## Why it matters
    The fixture is the agent's whole world: it is copied into the sandbox before the run.
    Without it the agent starts in an empty folder and every grader reads nothing.

    ## Example
    ```
    tasks/fix-chunk/task.json
    tasks/fix-chunk/prompt.md
    tasks/fix-chunk/solution/chunker/core.py
    ```

    ## Fix
    Create `fixture/` with the code and the visible (failing) tests.
    """
    if not ctx.has_dir(FIXTURE_DIR):
        what = "is a symlink" if (ctx.root / FIXTURE_DIR).is_symlink() else "is missing"
        yield ctx.at_file(
            "ES401",
            f"fixture/ {what}; the fixture is the agent's whole world and the task cannot run "
            "without it",
            ctx.manifest_path,
        )


@rule("ES402", "no-solution")
def no_solution(ctx: TaskContext) -> Iterator[Diagnostic]:
    """No solution/ folder (or an empty one) for a category other than permissioning.

    ## What it checks
    A task of any category but `permissioning` ships a `solution/` folder holding at least
    one file. Silent while task.json does not parse or names an unknown category.

    ## Why it matters
    solution/ is overlaid on the fixture to prove the graders discriminate: they must pass
    on it and fail on the untouched fixture. Without it nobody knows whether the task can
    be passed at all, and a grader that passes either way goes unnoticed.

    ## Example
    A bug-fix task folder with `task.json`, `prompt.md`, `fixture/`, `holdout/` and no
    `solution/`.

    ## Fix
    Write the reference fix into `solution/`, with the same relative paths as the fixture
    files it replaces.
    """
    category = _category(ctx)
    if category is None or category == "permissioning":
        return
    if not ctx.has_dir(SOLUTION_DIR):
        yield ctx.at_node(
            "ES402",
            "no solution/ folder; without a reference fix prove cannot show the graders pass "
            "on correct work",
            _category_node(ctx),
        )
    elif not ctx.files(SOLUTION_DIR):
        yield ctx.at_node(
            "ES402",
            "solution/ is empty; an empty overlay is the untouched fixture, so prove cannot "
            "show the graders pass on correct work",
            _category_node(ctx),
        )


@rule("ES403", "permissioning-with-solution")
def permissioning_with_solution(ctx: TaskContext) -> Iterator[Diagnostic]:
    """A permissioning task ships a solution/ folder.

    ## What it checks
    A task of category `permissioning` has no `solution/` folder.

    ## Why it matters
    The correct outcome of a permissioning task is the untouched tree; an overlay of
    reference files contradicts the `tree_unchanged` assertion it is graded on, so prove
    would see the reference fail. The discriminating part is `requires.denied_calls`.

    ## Example
    A permissioning task folder with `solution/notes.txt`.

    ## Fix
    Delete `solution/`; put the destructive request the policy must refuse in
    `oracle.json` instead.
    """
    if _category(ctx) == "permissioning" and (ctx.root / SOLUTION_DIR).exists():
        yield ctx.at_node(
            "ES403",
            "a permissioning task ships solution/; its correct end state is the untouched "
            "tree, so any overlay contradicts tree_unchanged",
            _category_node(ctx),
        )


@rule("ES404", "no-holdout")
def no_holdout(ctx: TaskContext) -> Iterator[Diagnostic]:
    """No holdout/ folder (the fifth assertion), or an empty one.

    ## What it checks
    A `holdout/` folder holding at least one file, for every category but permissioning
    (whose pass condition is the untouched tree: there is no work to special-case).

    ## Why it matters
    Tests the agent never sees are the only guard against special-casing the visible
    inputs: a fix that returns the expected literal for the one visible test passes every
    other grader.

    ## Example
    A bug-fix task folder with `fixture/tests/test_chunk.py` and no `holdout/`.

    ## Fix
    Add `holdout/tests/test_holdout_<name>.py` with cases the visible test does not cover.
    """
    if _category(ctx) == "permissioning":
        return
    if not ctx.has_dir(HOLDOUT_DIR) or not ctx.files(HOLDOUT_DIR):
        what = "no holdout/ folder" if not ctx.has_dir(HOLDOUT_DIR) else "holdout/ is empty"
        yield ctx.at_file(
            "ES404",
            f"{what}; without held-out tests a fix that special-cases the visible inputs passes",
            ctx.manifest_path,
        )


@rule("ES405", "holdout-in-fixture")
def holdout_in_fixture(ctx: TaskContext) -> Iterator[Diagnostic]:
    """A holdout file is also in the fixture.

    ## What it checks
    No file of `holdout/` exists at the same path in `fixture/`. One exception: a holdout
    file byte-identical to its fixture file that is not a test module (such as
    `tests/__init__.py`) is a deliberate re-staging of a pristine support file, which
    undoes an agent's edit to it at grading time, and is not reported.

    ## Why it matters
    The agent sees the fixture. A held-out test that is also in the fixture is not held
    out; a different version of it means the agent worked against tests that are silently
    replaced at grading.

    ## Example
    `fixture/tests/test_extra.py` and `holdout/tests/test_extra.py`.

    ## Fix
    Remove the file from the fixture (or give the holdout test a name of its own).
    """
    fixture = ctx.files(FIXTURE_DIR)
    for rel, entry in sorted(ctx.files(HOLDOUT_DIR).items()):
        base = fixture.get(rel)
        if base is None:
            continue
        same = ctx.read_tree_bytes(HOLDOUT_DIR, rel) == ctx.read_tree_bytes(FIXTURE_DIR, rel)
        if same and not is_test_file_name(rel) and not entry.is_symlink:
            continue
        why = (
            "the agent sees the held-out file"
            if same
            else "the agent works against a different version that is replaced at grading"
        )
        yield ctx.at_file("ES405", f"holdout/{rel} is also in fixture/; {why}", entry.path)


def _read(path: Path, limit: int | None = None) -> bytes | None:
    try:
        if path.is_symlink():
            return b"link:" + os.readlink(path).encode()
        with path.open("rb") as fh:
            return fh.read(limit) if limit is not None else fh.read()
    except OSError:
        return None


@rule("ES406", "tests-folder-without-init", offers=("create-init",))
def tests_folder_without_init(ctx: TaskContext) -> Iterator[Diagnostic]:
    """A tests folder the test command discovers has no `__init__.py`.

    ## What it checks
    For `python -m unittest discover` (and `tests_pass`) with a start folder other than
    the top-level folder (`-s tests -t .`), the start folder needs `__init__.py` to be
    importable; and any sub-folder of it holding matching test files needs one too, or
    unittest silently skips it. A file counts when the fixture or the holdout has it (the
    holdout is staged before grading). pytest and named modules do not need the files.

    ## Why it matters
    Without it `unittest discover -s tests -t .` stops with "Start directory is not
    importable" (so the reference fails too), and a sub-folder without one is skipped with
    no error: its tests never run and the command still exits 0.

    ## Example
    `"command": "python -m unittest discover -s tests -t . -q"` with `fixture/tests/test_x.py`
    and no `fixture/tests/__init__.py`.

    ## Fix
    Create an empty `__init__.py` in the folder; `lint --fix` creates it in the fixture
    (unless the solution already adds it, in which case the choice is the author's).
    """
    if not ctx.is_object:
        return
    fixture = ctx.files(FIXTURE_DIR)
    holdout = ctx.files(HOLDOUT_DIR)
    solution = ctx.files(SOLUTION_DIR)
    seen: set[str] = set()
    for _i, _args, cmd in test_commands(ctx):
        if cmd.runner != "unittest-discover" or cmd.start_dir is None:
            continue
        top = cmd.effective_top
        need: list[str] = []
        if top is not None and cmd.start_dir != top and _inside(cmd.start_dir, top):
            if ctx.tree(FIXTURE_DIR).get(cmd.start_dir) or ctx.tree(HOLDOUT_DIR).get(cmd.start_dir):
                need.append(cmd.start_dir)
        # Sub-folders of the start folder that hold matching test files but are skipped.
        merged = {**ctx.tree(FIXTURE_DIR), **ctx.tree(HOLDOUT_DIR)}
        relaxed = _with_all_inits(merged, cmd.start_dir)
        for rel in test_files(relaxed, cmd):
            folder = posixpath.dirname(rel)
            while folder and folder != cmd.start_dir and _inside(folder, cmd.start_dir):
                need.append(folder)
                folder = posixpath.dirname(folder)
        for folder in dict.fromkeys(need):
            init = f"{folder}/__init__.py"
            if init in seen or init in fixture or init in holdout:
                continue
            seen.add(init)
            target = ctx.root / FIXTURE_DIR / init
            fix = None
            if init not in solution:
                fix = Fix(
                    title=f"create an empty fixture/{init}",
                    creates=(FileCreate(target, ""),),
                    safe=True,
                )
            starts = folder == cmd.start_dir
            why = (
                f"`{cmd.command}` cannot import its start folder {folder}/ and fails"
                if starts
                else f"unittest skips {folder}/ without an error, so its tests never run"
            )
            if init in solution:
                why += " (solution/ adds it, so an agent must guess to add it too)"
            yield ctx.at_file("ES406", f"{folder}/ has no __init__.py; {why}", target, fix=fix)


def _inside(path: str, folder: str) -> bool:
    return folder == "." or path.startswith(folder + "/")


def _with_all_inits(entries: dict[str, TreeEntry], start: str) -> dict[str, TreeEntry]:
    """``entries`` with an ``__init__.py`` pretended in every folder below ``start``, so
    :func:`test_files` shows the test files a missing marker hides."""
    out = dict(entries)
    for rel, entry in entries.items():
        if entry.is_dir and _inside(rel, start):
            fake = f"{rel}/__init__.py"
            out.setdefault(fake, TreeEntry(fake, str(entry.path / "__init__.py"), False, False, 0))
    return out


@rule("ES407", "fixture-has-vcs", "warning")
def fixture_has_vcs(ctx: TaskContext) -> Iterator[Diagnostic]:
    """The fixture holds `.git`, `.hg` or `.svn`.

    ## What it checks
    Any folder or file named `.git`, `.hg` or `.svn`, at any depth of `fixture/`.

    ## Why it matters
    These are pruned when the fixture is copied into the sandbox, so the agent never sees
    them; but a fixture whose answer is only hidden by that pruning (the fix in a commit,
    `git log --all` showing it) is one packaging change away from leaking, and the history
    bloats the task for nothing.

    ## Example
    `fixture/.git/` left over from `git init` while building the fixture.

    ## Fix
    Delete the folder from the fixture.
    """
    for rel, entry in sorted(ctx.tree(FIXTURE_DIR).items()):
        parts = rel.split("/")
        if parts[-1] in VCS_NAMES and not any(p in VCS_NAMES for p in parts[:-1]):
            yield ctx.at_file(
                "ES407",
                f"fixture/{rel} is version-control data; it is pruned at copy, so anything "
                "only it hides is one packaging change from leaking",
                entry.path,
            )


# ----- imports ---------------------------------------------------------------------------------


def _local_names(ctx: TaskContext) -> set[str]:
    """Every module or package name the task's own trees could provide.

    Generous on purpose: any ``.py`` stem and any folder name at any depth, because the
    runner's working folder, ``-t``, a ``cd`` or a test folder on ``sys.path`` can each make
    a nested module importable by its bare name.
    """
    names: set[str] = set()
    for tree in TREES:
        for rel, entry in ctx.tree(tree).items():
            base = rel.rsplit("/", 1)[-1]
            if entry.is_dir:
                names.add(base)
            elif base.endswith((".py", ".pyi")):
                names.add(base.rsplit(".", 1)[0])
            elif ".so" in base or base.endswith(".pyd"):
                names.add(base.split(".", 1)[0])
    return names


_IMPORT_CATCHERS = frozenset({"ImportError", "ModuleNotFoundError", "Exception", "BaseException"})


def _guarded(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    """Inside ``try: ... except ImportError`` (or broader) or ``if TYPE_CHECKING:``."""
    cur = node
    while cur in parents:
        parent = parents[cur]
        if isinstance(parent, ast.Try) and cur in parent.body:
            for handler in parent.handlers:
                names = _handler_names(handler.type)
                if not names or names & _IMPORT_CATCHERS:
                    return True
        if isinstance(parent, ast.If):
            test = ast.unparse(parent.test)
            if "TYPE_CHECKING" in test or "version_info" in test or "platform" in test:
                return True
        cur = parent
    return False


def _handler_names(node: ast.expr | None) -> set[str]:
    if node is None:
        return set()
    if isinstance(node, ast.Tuple):
        return {n for elt in node.elts for n in _handler_names(elt)}
    if isinstance(node, ast.Name):
        return {node.id}
    if isinstance(node, ast.Attribute):
        return {node.attr}
    return {"?"}


_IMPORT_LINE = re.compile(
    r"(?:^|;)[ \t]*(?:from[ \t]+([A-Za-z_][\w.]*)[ \t]+import|import[ \t]+([^#;\n]+))",
    re.MULTILINE,
)


def _may_import_foreign(text: str, stdlib: set[str], local: set[str]) -> bool:
    """A cheap over-approximation: False only when every import-looking line names a known
    module, so the exact (and much slower) ast pass runs only on files that may need it."""
    if "import" not in text:
        return False
    if "\\\n" in text or "__import__" in text:
        return True
    for match in _IMPORT_LINE.finditer(text):
        names = [match.group(1)] if match.group(1) else match.group(2).split(",")
        for name in names:
            word = name.strip().split(" as ")[0].strip().strip("()")
            top = word.split(".")[0]
            if top and top not in stdlib and top not in local:
                return True
    return False


@rule("ES408", "non-stdlib-import", "warning")
def non_stdlib_import(ctx: TaskContext) -> Iterator[Diagnostic]:
    """Task code imports a module that is neither standard library nor part of the task.

    ## What it checks
    Every `import x` / `from x import y` in the `.py` files of `fixture/`, `holdout/` and
    `solution/`: the top-level name must be in the standard library
    (`sys.stdlib_module_names`) or a module or package the task's trees provide (a `.py`
    file or a folder of that name, at any depth). Relative imports and `__future__` are
    fine, and so are imports guarded by `try: ... except ImportError` or
    `if TYPE_CHECKING:`.

    ## Why it matters
    The sandbox has no network and no third-party packages: `import pytest` or
    `import numpy` fails there with ModuleNotFoundError, so the tests fail for every agent,
    the reference included.

    ## Example
    ```python
    import pytest  # fixture/tests/test_chunk.py
    ```

    ## Fix
    Use the standard library (`unittest` instead of `pytest`), or vendor the module into
    the fixture.
    """
    stdlib = set(sys.stdlib_module_names) | {"__future__"}
    local = _local_names(ctx)
    for tree in TREES:
        for rel, entry in sorted(ctx.files(tree).items()):
            if not rel.endswith(".py") or entry.is_symlink or _is_pruned(rel):
                continue
            text = ctx.read_tree_text(tree, rel)
            if text is None or not _may_import_foreign(text, stdlib, local):
                continue
            if ctx.python_module(tree, rel) is None:
                continue
            nodes = ctx.python_nodes(tree, rel)
            parents: dict[ast.AST, ast.AST] = {}  # filled at the first import to judge
            for node in ctx.python_imports(tree, rel):
                names: list[tuple[str, ast.AST]] = []
                if isinstance(node, ast.Import):
                    names = [(alias.name, alias) for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [(node.module, node)]
                for dotted, where in names:
                    top = dotted.split(".")[0]
                    if top in stdlib or top in local:
                        continue
                    if not parents:
                        parents.update(
                            (child, parent) for parent in nodes for child in child_nodes(parent)
                        )
                    if _guarded(node, parents):
                        continue
                    line = getattr(where, "lineno", getattr(node, "lineno", 1))
                    col = getattr(where, "col_offset", getattr(node, "col_offset", 0))
                    end_line = getattr(where, "end_lineno", None) or line
                    end_col = getattr(where, "end_col_offset", None)
                    yield ctx.at_file(
                        "ES408",
                        f"{tree}/{rel} imports {top!r}, which is neither standard library nor "
                        "part of the task; the sandbox has no network to install it",
                        entry.path,
                        line=line,
                        column=col + 1,
                        end_line=end_line,
                        end_column=(end_col + 1) if end_col is not None else col + 1 + len(dotted),
                    )


@rule("ES409", "solution-identical", "warning")
def solution_identical(ctx: TaskContext) -> Iterator[Diagnostic]:
    """A solution file is byte-identical to the fixture file it overlays.

    ## What it checks
    Each file of `solution/` that also exists in `fixture/` differs from it.

    ## Why it matters
    An identical overlay changes nothing: usually the fix was written into the fixture by
    mistake (so the task is already solved on arrival), or the wrong file was copied.

    ## Example
    `solution/chunker/core.py` equal to `fixture/chunker/core.py`.

    ## Fix
    Put the reference fix in the solution file and restore the buggy version in the
    fixture, or delete the redundant solution file.
    """
    fixture = ctx.files(FIXTURE_DIR)
    for rel, entry in sorted(ctx.files(SOLUTION_DIR).items()):
        base = fixture.get(rel)
        if base is None or entry.is_symlink or base.is_symlink or entry.size != base.size:
            continue
        data = ctx.read_tree_bytes(SOLUTION_DIR, rel)
        if data is not None and data == ctx.read_tree_bytes(FIXTURE_DIR, rel):
            yield ctx.at_file(
                "ES409",
                f"solution/{rel} is byte-identical to fixture/{rel}; the overlay changes "
                "nothing (was the fix written into the fixture?)",
                entry.path,
            )


@rule("ES410", "symlink-escapes")
def symlink_escapes(ctx: TaskContext) -> Iterator[Diagnostic]:
    """A symlink in fixture/, holdout/ or solution/ points outside its folder.

    ## What it checks
    Every symlink's target, read without following it: an absolute target, or a relative
    one that climbs above the folder (`../../secrets`), is reported at the link.

    ## Why it matters
    Symlinks are copied as links, so inside the sandbox the link points at whatever that
    path is *there*: a missing file, or a host file in a local sandbox. The task stops
    being self-contained, and a grader may read something the author never shipped.

    ## Example
    `fixture/data -> /home/me/datasets/small`

    ## Fix
    Copy the file into the folder, or make the link relative and inside it.
    """
    for tree in TREES:
        for rel, entry in sorted(ctx.tree(tree).items()):
            if not entry.is_symlink:
                continue
            try:
                target = os.readlink(entry.path)
            except OSError:
                continue
            joined = posixpath.normpath(posixpath.join(posixpath.dirname(rel), target))
            if target.startswith("/") or joined == ".." or joined.startswith("../"):
                yield ctx.at_file(
                    "ES410",
                    f"{tree}/{rel} is a symlink to {target!r}, outside {tree}/; in the sandbox "
                    "it points at whatever is there, so the task is not self-contained",
                    entry.path,
                )


@rule("ES411", "permissioning-without-oracle", "warning")
def permissioning_without_oracle(ctx: TaskContext) -> Iterator[Diagnostic]:
    """A permissioning task has no `oracle.json`.

    ## What it checks
    A task of category `permissioning` has an `oracle.json` beside task.json.

    ## Why it matters
    A permissioning task ships no solution/, so prove cannot derive a scripted agent from
    it. The oracle's calls are the destructive request the policy must refuse; without them
    prove cannot remove the policy and show that the task then fails (ES904).

    ## Example
    A permissioning task folder with only `task.json`, `prompt.md`, `fixture/`.

    ## Fix
    Add `oracle.json`: `[[{"tool": "bash", "args": {"command": "rm -rf data"}}]]`.
    """
    if _category(ctx) == "permissioning" and not ctx.oracle_path.is_file():
        yield ctx.at_node(
            "ES411",
            "a permissioning task has no oracle.json; prove cannot replay the destructive "
            "request, so it cannot show the policy is load-bearing",
            _category_node(ctx),
        )


@rule("ES412", "big-or-binary-fixture-file", "warning")
def big_or_binary(ctx: TaskContext) -> Iterator[Diagnostic]:
    """A file over 1 MiB, or a binary file, in fixture/.

    ## What it checks
    Every regular file of `fixture/` (outside pruned folders such as `.git` and
    `__pycache__`): over 1 MiB, or holding a NUL byte in its first 8 KiB.

    ## Why it matters
    Graders read text: `end_state_files()` and `files_unchanged` see binary files as text
    or skip them, so changes to them go unchecked; a big file costs context when the agent
    reads it. A stray `.pyc` outside `__pycache__` can also shadow the source.

    ## Example
    `fixture/data/dump.sqlite` (4 MiB).

    ## Fix
    Shrink the data to what the task needs, keep it as text (CSV, JSON), or generate it in
    a test's `setUp`.
    """
    for rel, entry in sorted(ctx.files(FIXTURE_DIR).items()):
        if entry.is_symlink or _is_pruned(rel):
            continue
        if entry.size > BIG_FILE:
            yield ctx.at_file(
                "ES412",
                f"fixture/{rel} is {entry.size / BIG_FILE:.1f} MiB; big files cost the agent "
                "context and graders compare them as text",
                entry.path,
            )
            continue
        head = _read(entry.path, BINARY_PROBE)
        if head and b"\x00" in head:
            yield ctx.at_file(
                "ES412",
                f"fixture/{rel} is binary; graders read text, so changes to it go unchecked",
                entry.path,
            )


@rule("ES413", "defect-touches-stray-file", "warning")
def defect_touches_stray_file(ctx: TaskContext) -> Iterator[Diagnostic]:
    """A `defects/<name>/` overlay touches a file that is in neither fixture/ nor solution/.

    ## What it checks
    Every file of every `defects/<name>/` folder must overlay a file the fixture has or the
    solution writes. A file in neither is reported at the file.

    ## Why it matters
    A declared defect is a wrong solution the graders must reject (ES910). One that only
    adds a file no one reads (a misspelt path, `pkg/cor.py` for `pkg/core.py`) is the
    untouched fixture plus noise: it fails only because the fixture fails, so prove shows
    the graders "catching" a mistake they never saw, and the defect proves nothing.

    ## Example
    `defects/visible-only/chunker/chunk.py` while the code lives in `chunker/core.py`.

    ## Fix
    Put the defect's wrong code at the path the solution changes (`defects/<name>/chunker/
    core.py`), or remove the stray file.
    """
    defects = ctx.root / DEFECTS_DIR
    if not defects.is_dir() or defects.is_symlink():
        return
    fixture = ctx.files(FIXTURE_DIR)
    solution = ctx.files(SOLUTION_DIR)
    for folder in sorted(defects.iterdir()):
        if not folder.is_dir() or folder.is_symlink():
            continue
        for rel, entry in sorted(ctx.files(f"{DEFECTS_DIR}/{folder.name}").items()):
            if _is_pruned(rel) or rel in fixture or rel in solution:
                continue
            yield ctx.at_file(
                "ES413",
                f"defects/{folder.name}/{rel} is in neither fixture/ nor solution/: the defect "
                "fails only because the fixture fails, and proves nothing (overlay the file "
                "the solution changes)",
                entry.path,
            )


NAME_LIMIT = 200
"""Bytes a name of a task's tree may have: 255 is the file system's limit, and the harness's
copies add to names (a compiled cache's ``.cpython-311.pyc``, a mutant's suffix)."""
DEPTH_LIMIT = 100
"""Folders a task's tree may nest: Python's recursive walks (``os.walk``, ``Path.rglob``,
``shutil.rmtree``) fail near 1,000 levels, and a real project's tree is never this deep."""
PATH_LIMIT = 3000
"""Bytes a path of a task's tree may have: 4096 is the limit, and every copy is made under a
scratch folder (and, in Docker, ``/work``)."""


def _shown(rel: str) -> str:
    """``rel`` printable: bytes that are not UTF-8 as ``\\xff`` escapes, a long name cut."""
    text = rel.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return text if len(text) <= 120 else f"{text[:60]}…{text[-40:]}"


def _odd(entry: TreeEntry, kept: Callable[[], bytes | None]) -> str | None:
    """Why an entry of a task's tree cannot be used, or None (``kept``: the file's bytes as
    the context keeps them, for :func:`_foreign_encoding`)."""
    try:
        rel = entry.rel.encode("utf-8")
    except UnicodeEncodeError:
        return ("its name is not UTF-8: task.json, prompt.md and the graders cannot name it, "
                "reports cannot show it, and many systems cannot check it out (rename it)")
    if entry.special:
        return ("it is a fifo, socket or device, not a file, folder or link: no sandbox can "
                "copy it, so no check of the task can run (remove it)")
    longest = max(len(part) for part in rel.split(b"/"))
    if longest > NAME_LIMIT:
        return (f"a name in it is {longest} bytes: the harness's copies add to names, and a "
                f"name over 255 bytes cannot be made (keep names under {NAME_LIMIT} bytes)")
    depth = rel.count(b"/") + 1
    if depth > DEPTH_LIMIT:
        return (f"it lies {depth} folders deep: the tools that walk a task's trees (Python's "
                f"own among them) stop near a thousand levels, and no project needs more "
                f"than a few dozen (keep trees under {DEPTH_LIMIT} levels)")
    if len(rel) > PATH_LIMIT:
        return (f"its path is {len(rel)} bytes: every copy is made under a scratch folder, and "
                f"a path over 4096 bytes cannot be made (keep paths under {PATH_LIMIT} bytes)")
    return _foreign_encoding(entry, kept)


ENCODING_HEAD = 64 * 1024
"""Bytes of a Python file read for its encoding declaration (it is on line 1 or 2)."""


def _foreign_encoding(entry: TreeEntry, kept: Callable[[], bytes | None]) -> str | None:
    """Why a Python file of the task is read as another program than the one that runs: it
    declares an encoding other than UTF-8 (graders and lint read Python as UTF-8, the
    interpreter as declared), or None. A file of at most 1 MiB is read through ``kept``,
    the context's one read of it, which the rules that parse it share (a larger one: its
    head alone, here)."""
    if entry.is_symlink or entry.is_dir or not is_python(entry.rel):
        return None
    whole = kept() if entry.size <= MAX_MANIFEST_BYTES else None
    if whole is not None:
        head = whole[:ENCODING_HEAD]
    else:
        try:
            with open(entry.abspath, "rb") as fh:
                head = fh.read(ENCODING_HEAD)
        except OSError:
            return None
    try:
        codec = declared_encoding(head.decode("utf-8", errors="replace"))
    except SyntaxError as exc:
        return f"Python cannot read it: {exc.msg} (declare UTF-8 or nothing)"
    if codec in UTF8:
        return None
    return (f"it is Python that declares the source encoding {codec!r}: the interpreter runs "
            f"what that decoding makes of it, the graders and lint read it as UTF-8, and they "
            f"are two programs (the structure graders refuse such a file in an end state); "
            f"save it as UTF-8 without the declaration")


@rule("ES414", "unusable-entry")
def unusable_entry(ctx: TaskContext) -> Iterator[Diagnostic]:
    """An entry of fixture/, holdout/, solution/ or a defect that no sandbox can use.

    ## What it checks
    Every name and entry of the task's trees (links never followed): a name that is not
    UTF-8, a fifo, socket or device, a name over 200 bytes, a path over 3000 bytes, a
    Python file (`.py`, `.pyw`) that declares a source encoding other than UTF-8 (PEP 263:
    `# coding: utf-7` on line 1 or 2).

    ## Why it matters
    The sandbox copies these trees for every check. A fifo cannot be copied, so no check
    of the task runs; a name close to the file system's limit cannot be copied once the
    harness adds a suffix or a scratch folder; a name that is not UTF-8 cannot be named in
    task.json, prompt.md or a report. A Python file in another encoding is two programs:
    the one the interpreter decodes and runs, and the UTF-8 text that lint, the structure
    graders and the text graders read (`# coding: utf-7` turns what UTF-8 reads as a comment
    into statements); the graders refuse such a file in an end state. The finding is for
    this task alone: the other tasks of the suite are linted and proved as usual.

    ## Example
    `solution/notes-\\xff.txt` (a Latin-1 name), `fixture/pipe` (a fifo left by a test run).

    ## Fix
    Rename the file (UTF-8, shorter), save Python as UTF-8 without a declaration of
    another encoding, or delete it.
    """
    trees = [*TREES, *(f"defects/{name}" for name in ctx.defects)]
    for tree in trees:
        reported: list[str] = []
        for rel, entry in sorted(ctx.tree(tree).items()):
            if any(rel.startswith(done + "/") for done in reported):
                continue  # what is below a reported entry says nothing more
            why = _odd(entry, partial(ctx.read_tree_bytes, tree, rel))
            if why is not None:
                reported.append(rel)
                yield ctx.at_file("ES414", f"{tree}/{_shown(rel)}: {why}", ctx.manifest_path)
