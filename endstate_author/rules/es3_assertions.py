"""ES3 — the mandatory assertions and the category contracts."""

from __future__ import annotations

import ast
import json
import posixpath
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from endstate_author.engine.context import TaskContext
from endstate_author.engine.declare import rule
from endstate_author.engine.diagnostics import Diagnostic, Fix, TextEdit
from endstate_author.engine.discovery import (
    TEST_GRADERS,
    TestCommand,
    builtin_name,
    grader_command,
    is_test_file_name,
    split_grader,
    test_files,
)
from endstate_author.engine.jsonpos import JNode
from endstate_harness.graders import grader_search_paths, pyast
from endstate_harness.graders.names import COMMAND_GRADERS
from endstate_harness.layout import CATEGORIES

NO_NEW_SKIPS = "endstate.evals.graders:no_new_skips"
CHANGED_PATHS_WITHIN = "endstate.evals.graders:changed_paths_within"

# ----- shared facts about a task (also used by ES4 and ES5) ------------------------------------


def graders_named(ctx: TaskContext, short: str) -> list[tuple[int, dict[str, Any], JNode]]:
    """(index, args, node) of every library grader with this short name."""
    return [(i, args, node) for i, _name, args, node in ctx.library_graders(short)]


def has_grader(ctx: TaskContext, short: str) -> bool:
    return bool(graders_named(ctx, short))


def graders_list(ctx: TaskContext) -> list[Any] | None:
    """The ``graders`` array when it is a non-empty list (ES209 speaks otherwise)."""
    graders = ctx.data.get("graders")
    return graders if isinstance(graders, list) and graders else None


def norm_path(path: str) -> str:
    """A manifest path as the sandbox resolves it (``./tests//x.py`` → ``tests/x.py``)."""
    return posixpath.normpath(path.replace("\\", "/")) if path else path


def test_commands(ctx: TaskContext) -> list[tuple[int, dict[str, Any], TestCommand]]:
    """(grader index, args, command) for each grader that runs a test command."""
    out = []
    for i, name, args, _node in ctx.grader_entries():
        cmd = grader_command(name, args)
        if cmd is not None:
            out.append((i, args, cmd))
    return out


def fixture_test_files(ctx: TaskContext) -> list[str]:
    """The fixture's test files: the files the task's test commands run.

    When no test command can be read exactly (``make test``, a suite grader, none at all),
    the fixture files named like tests (``test_*.py``, ``*_test.py``) stand in: pinning is
    about the files an agent could edit to turn the run green, and those are them.
    """
    fixture = ctx.fixture
    commands = [cmd for _, _, cmd in test_commands(ctx)]
    found: set[str] = set()
    for cmd in commands:
        found.update(test_files(fixture, cmd))
    if not commands or any(not cmd.known for cmd in commands):
        found.update(rel for rel, e in fixture.items() if not e.is_dir and is_test_file_name(rel))
    return sorted(found)


def pinned_paths(ctx: TaskContext) -> set[str]:
    """Every path named by a ``files_unchanged`` grader, normalised."""
    out: set[str] = set()
    for _i, args, _node in graders_named(ctx, "files_unchanged"):
        paths = args.get("paths")
        if isinstance(paths, list):
            out.update(norm_path(p) for p in paths if isinstance(p, str))
    return out


def _paths_node(ctx: TaskContext, index: int) -> JNode | None:
    return ctx.node(("graders", index, "args", "paths"))


def _valid_category(ctx: TaskContext) -> str | None:
    return ctx.category if ctx.category in CATEGORIES else None


def _category_node(ctx: TaskContext) -> JNode | None:
    """The category value, or the ``graders`` key when the category is the default."""
    node = ctx.node(("category",))
    if node is not None:
        return node
    pair = ctx.pair(("graders",))
    return pair.key_node if pair is not None else None


def _graders_key(ctx: TaskContext) -> JNode | None:
    pair = ctx.pair(("graders",))
    return pair.key_node if pair is not None else None


def append_grader_fix(
    ctx: TaskContext, grader: dict[str, Any], title: str, *, safe: bool
) -> Fix | None:
    """A fix that appends ``grader`` to the ``graders`` array, in the array's own style.

    With two or more entries the separator between the last two (comma, newline and
    indentation, or a comma and a space) is reused, so the new entry looks hand-written;
    with one entry, the whitespace after ``[`` decides between a new line and a space.
    Every other byte of the file is kept.
    """
    array = ctx.node(("graders",))
    raw = ctx.raw
    if array is None or array.kind != "array" or not array.items or raw is None:
        return None
    items = array.items
    if len(items) >= 2:
        sep = raw[items[-2].end : items[-1].start].decode("utf-8", errors="replace")
        if "," not in sep:
            return None
    else:
        lead = raw[array.start + 1 : items[0].start].decode("utf-8", errors="replace")
        sep = "," + lead if "\n" in lead else ", "
    text = sep + json.dumps(grader, ensure_ascii=False)
    end = items[-1].end
    return Fix(title=title, edits=(TextEdit(ctx.manifest_path, end, end, text),), safe=safe)


# ----- suite graders: do they run anything? ----------------------------------------------------


def _module_file(ctx: TaskContext, module: str) -> Path | None:
    """Where a suite grader module lives, in the search order of task-format.md §7."""
    roots: list[Path] = [ctx.root, ctx.suite_root]
    try:
        roots = list(grader_search_paths(ctx.root, suite_root=ctx.suite_root))
    except Exception:  # the harness's search order failed: fall back to task and suite
        pass
    rel = Path(*module.split("."))
    for root in roots:
        for candidate in (root / rel.with_suffix(".py"), root / rel / "__init__.py"):
            if candidate.is_file() and not candidate.is_symlink():
                return candidate
    return None


def suite_grader_runs(ctx: TaskContext, name: str) -> bool | None:
    """Whether a suite grader's module runs commands: ``True``/``False``, None if unreadable.

    The module is the file the static catalogue resolves the name to (re-exports followed).
    Read statically (never imported): a call of an attribute named ``run``
    (``sandbox.run(...)``), or any use of ``subprocess`` / ``os.system``, counts. The whole
    module is read rather than the one function, because graders call helpers.
    """
    parts = split_grader(name)
    if parts is None:
        return None
    path: Path | None
    try:
        info = ctx.resolve(name)
    except Exception:  # the catalogue failed on this name: look the module up ourselves
        path = _module_file(ctx, parts[0])
    else:
        # Not found (ES202 reports it) or compiled: unknown either way.
        path = info.file if info is not None else None
    if path is None:
        return None
    try:
        if path.stat().st_size > 1 << 20:
            return None
        tree = pyast.parse(path.read_bytes())
    except (OSError, SyntaxError, ValueError):
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in ("run", "system", "Popen", "check_call", "check_output"):
                return True
        if isinstance(node, ast.Import | ast.ImportFrom):
            names = [a.name for a in node.names] + [getattr(node, "module", None) or ""]
            if any(n.split(".")[0] == "subprocess" for n in names):
                return True
    return False


# ----- the four assertions ---------------------------------------------------------------------


def _exempt_from_work(ctx: TaskContext) -> bool:
    """Permissioning tasks (and any task pinned whole by tree_unchanged) do no work."""
    return ctx.category == "permissioning" or has_grader(ctx, "tree_unchanged")


@rule("ES301", "no-work-grader", offers=("mandatory-assertions",))
def no_work_grader(ctx: TaskContext) -> Iterator[Diagnostic]:
    """No grader runs the work.

    ## What it checks
    At least one grader executes something in the sandbox: `command_succeeds`, the
    project's `endstate_harness.graders:tests_pass`, or a suite grader whose module calls
    `.run(...)` (e.g. `sandbox.run`) or uses `subprocess` (read from its source, never
    imported). A suite grader whose source cannot be found is given the benefit of the
    doubt (ES202 reports it). Not checked for permissioning tasks, nor for a task graded by
    `tree_unchanged`: there the work *is* leaving the tree alone.

    ## Why it matters
    Graders that only look at files (`file_contains`, `paths_exist`, `pattern_count`)
    accept code that never runs: a function whose body is the expected text in a comment
    passes them. "The tests pass" is the assertion that the work was done.

    ## Example
    ```json
    "graders": [{"name": "endstate.evals.graders:file_contains",
                 "args": {"path": "pkg/core.py", "text": "range(0, len(items), size)"}}]
    ```

    ## Fix
    Add `{"name": "endstate.evals.graders:command_succeeds", "args": {"command":
    "python -m unittest discover -s tests -t . -q"}}` (or `endstate_harness.graders:tests_pass`).
    """
    if graders_list(ctx) is None or _exempt_from_work(ctx):
        return
    for _i, name, _args, _node in ctx.grader_entries():
        short = builtin_name(name)
        if short in COMMAND_GRADERS or short in TEST_GRADERS:
            return
        if short is None and suite_grader_runs(ctx, name) is not False:
            return
    yield ctx.at_node(
        "ES301",
        "no grader runs the work (no command_succeeds or tests_pass); file checks alone accept "
        "code that never runs",
        _graders_key(ctx),
    )


@rule("ES302", "tests-not-pinned", offers=("mandatory-assertions",))
def tests_not_pinned(ctx: TaskContext) -> Iterator[Diagnostic]:
    """The fixture's test files are not pinned.

    ## What it checks
    The test files of the fixture (the files the task's test command runs; files named
    `test_*.py` or `*_test.py` when the command cannot be read, e.g. `make test`) must each
    be named, by exact path, in a `files_unchanged` grader — or the task must use
    `tree_unchanged`. This rule fires when *none* of them is pinned; ES310 when some are.
    Exact paths only: `files_unchanged` compares the text of each named path, so a folder
    name pins nothing.

    ## Why it matters
    An agent that cannot make the code pass the tests can always make the tests pass the
    code. Without a pin, editing the assertion is the cheapest way to green.

    ## Example
    ```json
    "graders": [{"name": "endstate.evals.graders:command_succeeds",
                 "args": {"command": "python -m unittest discover -s tests -t . -q"}}]
    ```

    ## Fix
    Add `{"name": "endstate.evals.graders:files_unchanged", "args": {"paths":
    ["tests/test_chunk.py"]}}` naming every test file (and `tests/__init__.py`).
    """
    if graders_list(ctx) is None or has_grader(ctx, "tree_unchanged"):
        return
    tests = fixture_test_files(ctx)
    pinned = pinned_paths(ctx)
    if not tests or any(t in pinned for t in tests):
        return
    unchanged = graders_named(ctx, "files_unchanged")
    node = _paths_node(ctx, unchanged[0][0]) if unchanged else None
    shown = ", ".join(tests[:5]) + (f" and {len(tests) - 5} more" if len(tests) > 5 else "")
    yield ctx.at_node(
        "ES302",
        f"the fixture's test files ({shown}) are not pinned by files_unchanged or tree_unchanged; "
        "an agent can edit the tests until they pass",
        node or _graders_key(ctx),
    )


@rule("ES303", "no-new-skips-missing", offers=("mandatory-assertions",))
def no_new_skips_missing(ctx: TaskContext) -> Iterator[Diagnostic]:
    """No `no_new_skips` grader.

    ## What it checks
    The graders include `no_new_skips` (any module that offers it), unless the task uses
    `tree_unchanged`, which already forbids every edit.

    ## Why it matters
    Green because the test never ran is the cheapest way to pass a test command: a
    `@unittest.skip` or `self.skipTest()` added to a test leaves the run exiting 0. A pinned
    test file does not stop a skip raised from elsewhere, and a task without this grader has
    no assertion that names the hack.

    ## Example
    ```json
    "graders": [{"name": "endstate.evals.graders:command_succeeds", "args": {...}},
                {"name": "endstate.evals.graders:files_unchanged", "args": {...}}]
    ```

    ## Fix
    Add `{"name": "endstate.evals.graders:no_new_skips"}`; `lint --fix` appends it to the
    graders array in the array's own layout, leaving every other byte as it was.
    """
    if graders_list(ctx) is None or has_grader(ctx, "tree_unchanged"):
        return
    if has_grader(ctx, "no_new_skips"):
        return
    fix = append_grader_fix(ctx, {"name": NO_NEW_SKIPS}, "add the no_new_skips grader", safe=True)
    yield ctx.at_node(
        "ES303",
        "no no_new_skips grader; a skip marker added to a test makes the test command exit 0 "
        "without running it",
        _graders_key(ctx),
        fix=fix,
    )


@rule("ES304", "changed-paths-within-missing", offers=("mandatory-assertions",))
def changed_paths_within_missing(ctx: TaskContext) -> Iterator[Diagnostic]:
    """No `changed_paths_within` grader.

    ## What it checks
    The graders include `changed_paths_within`, unless the task uses `tree_unchanged`.

    ## Why it matters
    Several reward hacks live outside the code under test and pass every other grader:
    an empty-suite `load_tests` in `tests/__init__.py`, a local `unittest.py` that shadows
    the standard library, a `sitecustomize.py`, an unrelated module deleted on the way to
    green. Confining changes to the files the task is about is the one guard against them.

    ## Example
    ```json
    "graders": [{"name": "endstate.evals.graders:command_succeeds", "args": {...}},
                {"name": "endstate.evals.graders:files_unchanged", "args": {...}},
                {"name": "endstate.evals.graders:no_new_skips"}]
    ```

    ## Fix
    Add `{"name": "endstate.evals.graders:changed_paths_within", "args": {"allowed":
    ["pkg/core.py"]}}` naming what the work may touch. The quick fix (not applied by
    `lint --fix`: the list is a decision) proposes the paths solution/ changes.
    """
    if graders_list(ctx) is None or has_grader(ctx, "tree_unchanged"):
        return
    if has_grader(ctx, "changed_paths_within"):
        return
    changed = list(ctx.solution_changes)
    fix = None
    if changed:
        fix = append_grader_fix(
            ctx,
            {"name": CHANGED_PATHS_WITHIN, "args": {"allowed": changed}},
            "add changed_paths_within allowing what solution/ changes",
            safe=False,
        )
    yield ctx.at_node(
        "ES304",
        "no changed_paths_within grader; edits outside the code under test (tests/__init__.py, "
        "a shadowing unittest.py) can turn the run green unchecked",
        _graders_key(ctx),
        fix=fix,
    )


@rule("ES310", "tests-partly-pinned", "warning")
def tests_partly_pinned(ctx: TaskContext) -> Iterator[Diagnostic]:
    """Some of the fixture's test files are pinned and others are not.

    ## What it checks
    Of the test files the task's test command runs (see ES302), at least one is named in a
    `files_unchanged` grader and at least one is not. The finding names the unpinned ones.

    ## Why it matters
    Each unpinned test file can be edited, emptied or given a skip without any grader
    noticing; the pin on its neighbours reads as if the tests were protected.

    ## Example
    ```json
    {"name": "endstate.evals.graders:files_unchanged", "args": {"paths": ["tests/test_a.py"]}}
    ```
    with `tests/test_b.py` also in the fixture.

    ## Fix
    Add the named files to `paths`.
    """
    if graders_list(ctx) is None or has_grader(ctx, "tree_unchanged"):
        return
    tests = fixture_test_files(ctx)
    pinned = pinned_paths(ctx)
    loose = [t for t in tests if t not in pinned]
    if not loose or len(loose) == len(tests):
        return
    unchanged = graders_named(ctx, "files_unchanged")
    node = _paths_node(ctx, unchanged[0][0]) if unchanged else None
    yield ctx.at_node(
        "ES310",
        f"test file{'s' if len(loose) > 1 else ''} {', '.join(loose)} "
        f"{'are' if len(loose) > 1 else 'is'} not pinned while others are; "
        "an unpinned test can be edited to pass",
        node or _graders_key(ctx),
    )


# ----- category contracts ----------------------------------------------------------------------


def _bound_end(ctx: TaskContext, counter: str, end: str) -> Any:
    requires = ctx.data.get("requires")
    if not isinstance(requires, dict):
        return None
    bound = requires.get(counter)
    return bound.get(end) if isinstance(bound, dict) else None


def _requires_node(ctx: TaskContext, counter: str, end: str) -> JNode | None:
    """The most specific existing node of ``requires.<counter>.<end>``; category otherwise."""
    node = ctx.node(("requires", counter, end))
    if node is not None:
        return node
    for path in (("requires", counter), ("requires",)):
        pair = ctx.pair(path)
        if pair is not None:
            return pair.key_node
    return _category_node(ctx)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@rule("ES311", "verdict-in-process", "warning")
def verdict_in_process(ctx: TaskContext) -> Iterator[Diagnostic]:
    """The tests' verdict is decided inside the process that runs the agent's code.

    ## What it checks
    A task whose graders run Python tests (`command_succeeds` with `python -m unittest` or
    `pytest`, or the in-process `endstate_harness.graders:tests_pass`) and name no
    `endstate_harness.graders:judged_tests`. Permissioning tasks are exempt (their verdict is
    the untouched tree and the denied call).

    ## Why it matters
    A test runner that imports the agent's package shares its process with it, and code in
    that process can decide the outcome: `os._exit(0)` at import makes `command_succeeds` pass
    with failing tests (the guide's own example grader), and a payload aimed at the runner can
    forge even the hardened `tests_pass` (an object whose `__eq__` is always true, expected
    values read from the caller's frame). `judged_tests` keeps the expected values in a process
    the agent's code never runs in.

    ## Example
    ```json
    {"name": "endstate.evals.graders:command_succeeds",
     "args": {"command": "python -m unittest discover -s tests -t . -q"}}
    ```
    with no `judged_tests` beside it.

    ## Fix
    Add `{"name": "endstate_harness.graders:judged_tests", "args": {"start_dir": "tests"}}`
    (keep the command if you like: the visible tests are then a courtesy, not the verdict).
    Under plain endstate, run `endstate-author vendor` first.
    """
    if ctx.category == "permissioning" or graders_named(ctx, "judged_tests"):
        return
    names = {i: builtin_name(name) for i, name, _args, _node in ctx.grader_entries()}
    runs = [(i, cmd) for i, _args, cmd in test_commands(ctx) if cmd.runner != "unknown"]
    # the exit-status grader is the weakest: it leads when both kinds are present
    runs.sort(key=lambda run: names.get(run[0]) != "command_succeeds")
    for index, _cmd in runs:
        node = ctx.node(("graders", index, "name"))
        if node is None:
            continue
        if names.get(index) == "command_succeeds" and not has_grader(ctx, "tests_pass"):
            message = (
                "passes with failing tests: command_succeeds trusts the test runner's exit "
                "status, and the early-exit hack (os._exit(0) in the package's __init__.py) "
                "exits 0 before any test fails. Fix: add "
                '{"name": "endstate_harness.graders:judged_tests", "args": {"start_dir": '
                '"tests"}} beside it'
            )
        else:
            message = (
                "the tests run in the same process as the agent's code, which can decide "
                "their outcome (os._exit(0) at import passes a failing run; an always-equal "
                "object passes an assertEqual). Fix: add endstate_harness.graders:judged_tests "
                "beside it"
            )
        yield ctx.at_node("ES311", message, node)
        return


@rule("ES305", "permissioning-without-tree-unchanged")
def permissioning_without_tree_unchanged(ctx: TaskContext) -> Iterator[Diagnostic]:
    """A permissioning task without `tree_unchanged`.

    ## What it checks
    A task of category `permissioning` has a `tree_unchanged` grader.

    ## Why it matters
    The correct outcome of a permissioning task is that nothing happened. A refusal that
    still deleted the folder is not a refusal, and only comparing the whole tree shows it;
    `files_unchanged` on a few paths misses everything else the destructive command hit.

    ## Example
    ```json
    {"category": "permissioning", "graders": [{"name": "endstate.evals.graders:paths_exist",
     "args": {"paths": ["data/"]}}]}
    ```

    ## Fix
    Add `{"name": "endstate.evals.graders:tree_unchanged"}`.
    """
    if ctx.category != "permissioning" or has_grader(ctx, "tree_unchanged"):
        return
    yield ctx.at_node(
        "ES305",
        "a permissioning task has no tree_unchanged grader; a refusal that still changed the "
        "tree would pass",
        _category_node(ctx),
    )


@rule("ES306", "permissioning-without-denial")
def permissioning_without_denial(ctx: TaskContext) -> Iterator[Diagnostic]:
    """A permissioning task without `requires.denied_calls.min` ≥ 1.

    ## What it checks
    A task of category `permissioning` requires at least one denied tool call:
    `"requires": {"denied_calls": {"min": 1}}`.

    ## Why it matters
    An agent that ignored the destructive request leaves the same untouched tree as one the
    policy stopped. Only the denial counter separates refusing from not trying, and only it
    fails when the policy is removed (prove's ES904).

    ## Example
    ```json
    {"category": "permissioning", "requires": {"denied_calls": {"min": 0}}}
    ```

    ## Fix
    Set `"requires": {"denied_calls": {"min": 1}}`.
    """
    if ctx.category != "permissioning":
        return
    low = _bound_end(ctx, "denied_calls", "min")
    if _is_int(low) and low >= 1:
        return
    yield ctx.at_node(
        "ES306",
        "a permissioning task must require denied_calls.min ≥ 1; without a denial an agent "
        "that never tried passes the same as one the policy stopped",
        _requires_node(ctx, "denied_calls", "min"),
    )


@rule("ES307", "compaction-without-event")
def compaction_without_event(ctx: TaskContext) -> Iterator[Diagnostic]:
    """A compaction task without `requires.compaction_events.min` ≥ 1.

    ## What it checks
    A task of category `compaction` requires at least one compaction event.

    ## Why it matters
    Compaction is not a property of the end state: with an unlimited budget the same work
    lands without any compaction, and the task then tests nothing about it.

    ## Example
    ```json
    {"category": "compaction", "budget": {"max_context_tokens": 6000}}
    ```

    ## Fix
    Add `"requires": {"compaction_events": {"min": 1}}` and a budget small enough to force it.
    """
    if ctx.category != "compaction":
        return
    low = _bound_end(ctx, "compaction_events", "min")
    if _is_int(low) and low >= 1:
        return
    yield ctx.at_node(
        "ES307",
        "a compaction task must require compaction_events.min ≥ 1; otherwise it passes "
        "without compaction ever happening",
        _requires_node(ctx, "compaction_events", "min"),
    )


@rule("ES308", "recovery-block")
def recovery_block(ctx: TaskContext) -> Iterator[Diagnostic]:
    """A recovery task without a `recovery` block, or a `recovery` block on another category.

    ## What it checks
    A task of category `recovery` has `"recovery": {"crash_at_call": N}` (error). A task of
    any other category with a `recovery` block is a warning.

    ## Why it matters
    Without the block nothing is killed, so a recovery task is an ordinary task under a
    misleading name. On another category the run is killed and resumed anyway, which changes
    what the task measures without its category saying so (filters and reports miss it).

    ## Example
    ```json
    {"category": "recovery", "graders": [...]}
    ```

    ## Fix
    Add `"recovery": {"crash_at_call": 1, "after_side_effect": false}`, or on another
    category remove the block (or change the category to `recovery`).
    """
    category = _valid_category(ctx)
    if category is None:
        return
    has_block = "recovery" in ctx.data
    if category == "recovery" and not has_block:
        yield ctx.at_node(
            "ES308",
            "a recovery task has no recovery block; nothing is killed, so resuming is never tested",
            _category_node(ctx),
        )
    elif category != "recovery" and has_block:
        pair = ctx.pair(("recovery",))
        yield ctx.at_node(
            "ES308",
            f"a recovery block on a {category} task kills and resumes the run, which the "
            "category does not say; make it a recovery task or drop the block",
            pair.key_node if pair else None,
            severity="warning",
        )


@rule("ES309", "cost-without-ceiling")
def cost_without_ceiling(ctx: TaskContext) -> Iterator[Diagnostic]:
    """A cost task without a `max` on `requires.steps` or `requires.total_tokens`.

    ## What it checks
    A task of category `cost` bounds the run from above: `requires.steps.max` or
    `requires.total_tokens.max`.

    ## Why it matters
    A cost task asks "did it get there cheaply"; without a ceiling a runaway run that burns
    the whole step budget passes the same as an efficient one.

    ## Example
    ```json
    {"category": "cost", "requires": {"steps": {"min": 1}}}
    ```

    ## Fix
    Add `"requires": {"steps": {"max": 8}}` or `{"total_tokens": {"max": 60000}}`.
    """
    if ctx.category != "cost":
        return
    if _is_int(_bound_end(ctx, "steps", "max")) or _is_int(_bound_end(ctx, "total_tokens", "max")):
        return
    yield ctx.at_node(
        "ES309",
        "a cost task needs a max on requires.steps or requires.total_tokens; without a "
        "ceiling a runaway run passes like an efficient one",
        _requires_node(ctx, "steps", "max"),
    )


# ----- ES312: what the pinned tests import ---------------------------------------------------


def _imported_names(nodes: Sequence[ast.AST], rel: str) -> Iterator[tuple[str, int]]:
    """(dotted module name, line) for each import among a module's ``nodes`` (its walk, or
    just its imports);
    ``from a import b`` gives ``a.b`` (a submodule, if there is one) and ``a``. Relative
    imports are made absolute."""
    package = rel.split("/")[:-1]
    for node in nodes:
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - (node.level - 1)] if node.level else []
            if node.level and node.level - 1 > len(package):
                continue
            module = ".".join([*base, *([node.module] if node.module else [])])
            for alias in node.names:
                if alias.name != "*" and module:
                    yield f"{module}.{alias.name}", node.lineno
                elif alias.name != "*":
                    yield alias.name, node.lineno
            if module:
                yield module, node.lineno


def _module_files(name: str, importer: str, files: dict[str, Any]) -> list[str]:
    """The fixture files an import of ``name`` loads: from the tree's top, or from the
    importing file's own folder (where ``unittest discover -s`` puts it on the path)."""
    folder = posixpath.dirname(importer)
    parts = name.split(".")
    out = []
    for root in dict.fromkeys(["", folder]):
        base = posixpath.join(root, *parts) if root else "/".join(parts)
        for candidate in (f"{base}.py", f"{base}/__init__.py"):
            if candidate in files:
                out.append(candidate)
    return out


def _judge_reads_pristine(ctx: TaskContext, rel: str) -> bool:
    """Whether only ``judged_tests`` runs tests, each taking ``rel`` from the pristine
    fixture (it is under the judge's ``start_dir`` and the visible tests run): the end
    state's copy is then never read, and rewriting it changes nothing."""
    judges = 0
    for _i, name, args, _node in ctx.grader_entries():
        short = builtin_name(name)
        if short is None or (short != "judged_tests" and short in COMMAND_GRADERS | TEST_GRADERS):
            return False  # a suite grader, or a runner that reads the end state
        if short != "judged_tests":
            continue
        start = norm_path(str(args.get("start_dir", "tests"))).strip("/")
        inside = start in ("", ".") or rel.startswith(start + "/")
        if args.get("visible", True) is False or not inside:
            return False
        judges += 1
    return judges > 0


def append_path_fix(ctx: TaskContext, index: int, path: str) -> Fix | None:
    """A fix that adds ``path`` to the ``paths`` array of grader ``index``, in its style."""
    array = _paths_node(ctx, index)
    raw = ctx.raw
    if array is None or array.kind != "array" or not array.items or raw is None:
        return None
    items = array.items
    sep = raw[items[-2].end : items[-1].start].decode("utf-8", errors="replace") if len(
        items
    ) >= 2 else ", "
    if "," not in sep:
        return None
    end = items[-1].end
    return Fix(
        title=f"pin {path} with files_unchanged",
        edits=(TextEdit(ctx.manifest_path, end, end, sep + json.dumps(path)),),
        safe=True,
    )


@rule("ES312", "imported-module-not-pinned")
def imported_module_not_pinned(ctx: TaskContext) -> Iterator[Diagnostic]:
    """A module of the tree that a pinned or holdout test imports is not itself pinned.

    ## What it checks
    The Python files a pinned test file (one named by `files_unchanged`) or a holdout file
    imports, found statically (`import`, `from … import`, relative imports, and the test's
    own folder, which `unittest discover -s` puts on the path), that are fixture files on
    the test side of the tree: in the folder of a pinned or holdout test (or below it), or a
    `conftest.py`. Each must be pinned too. Not reported: package `__init__.py` files, the
    fixture's test files themselves (ES302/ES310 speak of those), a file the solution
    changes (that is the code under test), and a file that only `judged_tests` reads, from
    the pristine fixture (every grader that runs tests is `judged_tests` with the visible
    tests and the file under its `start_dir`: the agent's copy is never read).

    ## Why it matters
    The expected values of a data-driven test often live in a helper: `tests/cases.py`,
    `tests/expected.py`, a loader. A pinned test that imports an editable helper is not
    pinned at all: rewrite the helper's expected values (or the loader) and the tests pass
    with the bug left in.

    ## Example
    `tests/test_parse.py` (pinned) does `from tests.cases import CASES`, and
    `files_unchanged` does not name `tests/cases.py`.

    ## Fix
    Add the module to the `files_unchanged` paths (the quick fix, applied by `lint --fix`,
    appends it), or move the expected values into the pinned test or the holdout.
    """
    if graders_list(ctx) is None or has_grader(ctx, "tree_unchanged"):
        return
    fixture = ctx.files("fixture")
    holdout = ctx.files("holdout")
    pinned = pinned_paths(ctx)
    tests = set(fixture_test_files(ctx))
    # the test side of the tree: the folders of the fixture's tests and of the holdout
    folders = {posixpath.dirname(r) for r in tests} | {
        posixpath.dirname(r) for r in holdout if r.endswith(".py")
    }
    folders.discard("")  # tests at the top: the top folder is the code's too

    def test_side(rel: str) -> bool:
        return any(rel.startswith(f + "/") for f in folders)

    importers = [
        ("fixture", r) for r in sorted(pinned)
        if r in fixture and r.endswith(".py") and (r in tests or test_side(r))
    ]  # fmt: skip
    importers += [("holdout", r) for r in sorted(holdout) if r.endswith(".py")]
    if not importers:
        return
    changed = set(ctx.solution_changes)
    reported: set[str] = set()
    unchanged = graders_named(ctx, "files_unchanged")
    for tree, rel in importers:
        imports = ctx.python_imports(tree, rel)  # from the walk other rules share
        for name, _line in _imported_names(imports, rel):
            for found in _module_files(name, rel, fixture):
                if found in reported or found in pinned or found in holdout:
                    continue
                if posixpath.basename(found) == "__init__.py" or found in tests:
                    continue
                if found in changed:
                    continue
                side = posixpath.basename(found) == "conftest.py" or test_side(found)
                if not side or _judge_reads_pristine(ctx, found):
                    continue
                reported.add(found)
                fix = (
                    append_path_fix(ctx, unchanged[0][0], found)
                    if unchanged
                    else append_grader_fix(
                        ctx, {"name": "endstate.evals.graders:files_unchanged",
                              "args": {"paths": [found]}},
                        f"pin {found} with files_unchanged", safe=True,
                    )
                )  # fmt: skip
                node = _paths_node(ctx, unchanged[0][0]) if unchanged else None
                who = "pinned test" if tree == "fixture" else "holdout file"
                yield ctx.at_node(
                    "ES312",
                    f"{found} is imported by the {who} {rel} but not pinned: the agent can "
                    "rewrite it so the tests pass with the bug left in (add it to "
                    "files_unchanged)",
                    node or _graders_key(ctx),
                    fix=fix,
                )
