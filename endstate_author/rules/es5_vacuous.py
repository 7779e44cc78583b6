"""ES5 — assertions that cannot fail, found statically."""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterator
from typing import Any

from endstate_author.engine.context import TaskContext
from endstate_author.engine.declare import rule
from endstate_author.engine.diagnostics import Diagnostic
from endstate_author.engine.discovery import builtin_name, missing_module_targets
from endstate_author.engine.jsonpos import JNode
from endstate_author.rules.es3_assertions import (
    graders_named,
    norm_path,
    test_commands,
)
from endstate_harness.graders.names import PATH_ARGUMENTS
from endstate_harness.layout import FIXTURE_DIR, HOLDOUT_DIR, SOLUTION_DIR

DEFAULT_SKIP_GLOB = "*test*.py"
DEFAULT_MAX_STEPS = 25
PROBES = ("zz-endstate-probe", "zz-endstate-probe/zz-endstate-probe")
"""Paths no task has: a pattern matching both (and every real path) allows anything."""
_WILDCARD = re.compile(r"[*?\[]")


def _arg_node(ctx: TaskContext, index: int, *path: str | int) -> JNode | None:
    return ctx.node(("graders", index, "args", *path))


def _arg_key(ctx: TaskContext, index: int, key: str) -> JNode | None:
    pair = ctx.pair(("graders", index, "args", key))
    return pair.key_node if pair is not None else None


def _str_items(value: Any) -> list[tuple[int, str]]:
    if not isinstance(value, list):
        return []
    return [(i, v) for i, v in enumerate(value) if isinstance(v, str)]


@rule("ES501", "unchanged-path-not-in-fixture")
def unchanged_path_not_in_fixture(ctx: TaskContext) -> Iterator[Diagnostic]:
    """`files_unchanged` names a path that is not a file of the fixture.

    ## What it checks
    Each element of `files_unchanged`'s `paths` is a file in `fixture/` (after normalising
    `./` and doubled slashes). A folder does not count: the grader compares file texts.

    ## Why it matters
    A missing file reads as "" both in the fixture and in the end state, so the check
    compares "" with "" and passes: the file it was meant to protect (often a typo of the
    test file's name) is not protected at all.

    ## Example
    ```json
    {"name": "endstate.evals.graders:files_unchanged", "args": {"paths": ["tests/test_chunks.py"]}}
    ```
    when the fixture holds `tests/test_chunk.py`.

    ## Fix
    Name the fixture file exactly, one element per file.
    """
    fixture_files = ctx.files(FIXTURE_DIR)
    fixture_tree = ctx.tree(FIXTURE_DIR)
    for index, args, _node in graders_named(ctx, "files_unchanged"):
        for i, path in _str_items(args.get("paths")):
            rel = norm_path(path)
            if rel in fixture_files:
                continue
            what = (
                "is a folder of the fixture, not a file"
                if rel in fixture_tree
                else ("is not in the fixture")
            )
            yield ctx.at_node(
                "ES501",
                f'{path!r} {what}; files_unchanged then compares "" with "" and always passes',
                _arg_node(ctx, index, "paths", i),
            )


def _literal_prefix(pattern: str) -> str:
    """The folder part of a pattern before its first wildcard (``pkg/sub/*.py`` → ``pkg/sub``)."""
    match = _WILDCARD.search(pattern)
    head = pattern[: match.start()] if match else pattern
    return head.rsplit("/", 1)[0] if "/" in head else ""


@rule("ES502", "changed-paths-within-vacuous")
def changed_paths_within_vacuous(ctx: TaskContext) -> Iterator[Diagnostic]:
    """`changed_paths_within` that cannot do its job.

    ## What it checks
    Three things, with `fnmatch` semantics (`*` crosses `/`):
    * the solution changes a path no `allowed` pattern matches (error: the reference
      solution would fail this grader). Changed = a solution file that is new or differs
      from the fixture file it overlays.
    * an `allowed` pattern matches every path (error): every fixture and solution file
      *and* arbitrary new paths at the top and in a sub-folder — `*`, `**`, `?*`.
    * a pattern names nothing (warning): it matches no fixture or solution file and either
      has no wildcard or its fixed folder part (`chunkr/` in `chunkr/*`) is a folder of
      neither tree — the signature of a typo. Extension globs such as `*.md` name files
      an agent may create and are not reported.

    ## Why it matters
    A pattern that allows everything lets the hacks this grader exists for through (a
    `load_tests` in `tests/__init__.py`, a shadowing `unittest.py`); a pattern that misses
    the solution's file makes the task unpassable; a dead pattern usually means the real
    one is missing.

    ## Example
    ```json
    {"name": "endstate.evals.graders:changed_paths_within", "args": {"allowed": ["*"]}}
    ```

    ## Fix
    List exactly the files the work may touch (`pkg/module.py`); a glob only where the work
    may add files, and then by extension (`pkg/*.py`), never `pkg/*`, which also matches
    `pkg/__pycache__/…` (tasks/README says the same).
    """
    fixture = ctx.files(FIXTURE_DIR)
    solution = ctx.files(SOLUTION_DIR)
    universe = sorted(set(fixture) | set(solution))
    folders = {
        rel for tree in (FIXTURE_DIR, SOLUTION_DIR) for rel, e in ctx.tree(tree).items() if e.is_dir
    }
    changed = ctx.solution_changes if ctx.has_dir(SOLUTION_DIR) else ()
    for index, args, node in graders_named(ctx, "changed_paths_within"):
        allowed = args.get("allowed")
        if not isinstance(allowed, list):
            continue
        patterns = _str_items(allowed)
        stray = [p for p in changed if not any(fnmatch.fnmatch(p, pat) for _, pat in patterns)]
        if stray and patterns:
            yield ctx.at_node(
                "ES502",
                f"solution/ changes {', '.join(stray)}, which no allowed pattern matches; the "
                "reference solution fails this grader",
                _arg_key(ctx, index, "allowed") or node,
            )
        for i, pattern in patterns:
            at = _arg_node(ctx, index, "allowed", i)
            everything = [*universe, *PROBES]
            if all(fnmatch.fnmatch(p, pattern) for p in everything):
                yield ctx.at_node(
                    "ES502",
                    f"allowed pattern {pattern!r} matches every path, so changed_paths_within "
                    "allows any change, the test-shadowing hacks included",
                    at,
                )
                continue
            if any(fnmatch.fnmatch(p, pattern) for p in universe):
                continue
            literal = not _WILDCARD.search(pattern)
            prefix = _literal_prefix(pattern)
            if literal or (prefix and norm_path(prefix) not in folders):
                what = "path" if literal else f"folder {prefix}/"
                yield ctx.at_node(
                    "ES502",
                    f"allowed pattern {pattern!r} matches nothing: its {what} is in neither "
                    "fixture/ nor solution/ (a typo leaves the real path disallowed)",
                    at,
                    severity="warning",
                )


@rule("ES503", "solution-changes-pinned")
def solution_changes_pinned(ctx: TaskContext) -> Iterator[Diagnostic]:
    """The solution changes a pinned file.

    ## What it checks
    No file named by `files_unchanged` is changed by `solution/` (new, or different from
    the fixture); and with `tree_unchanged`, `solution/` changes nothing at all.

    ## Why it matters
    The reference solution is graded like an agent's work: if it edits a pinned file, the
    task fails on correct work, and the usual "fix" of unpinning the file opens the door to
    editing the tests.

    ## Example
    `files_unchanged` on `tests/test_chunk.py` and a `solution/tests/test_chunk.py`.

    ## Fix
    Remove the pinned file from `solution/` (fix the code, not the test), or stop pinning a
    file the work really must change.
    """
    if not ctx.has_dir(SOLUTION_DIR) or ctx.category == "permissioning":
        return
    changed = set(ctx.solution_changes)
    if not changed:
        return
    for index, args, _node in graders_named(ctx, "files_unchanged"):
        for i, path in _str_items(args.get("paths")):
            if norm_path(path) in changed:
                yield ctx.at_node(
                    "ES503",
                    f"solution/ changes the pinned file {path!r}; the reference solution "
                    "fails files_unchanged",
                    _arg_node(ctx, index, "paths", i),
                )
    for index, _args, node in graders_named(ctx, "tree_unchanged"):
        yield ctx.at_node(
            "ES503",
            f"tree_unchanged pins every file but solution/ changes {', '.join(sorted(changed))}; "
            "the reference solution fails it",
            ctx.node(("graders", index, "name")) or node,
        )


@rule("ES504", "skip-glob-matches-nothing", "warning")
def skip_glob_matches_nothing(ctx: TaskContext) -> Iterator[Diagnostic]:
    """`no_new_skips`'s glob matches no file of the fixture.

    ## What it checks
    The `glob` argument (default `*test*.py`, `fnmatch`, `*` crosses `/`) matches at least
    one file of `fixture/`.

    ## Why it matters
    The grader compares skip markers in the files the glob matches; matching none, it
    counts zero before and after and passes whatever the agent adds to the real tests.

    ## Example
    ```json
    {"name": "endstate.evals.graders:no_new_skips", "args": {"glob": "tests/*_spec.py"}}
    ```
    with tests named `tests/test_*.py`.

    ## Fix
    Use a glob that matches the test files (the default `*test*.py` usually does).
    """
    fixture = ctx.files(FIXTURE_DIR)
    for index, args, node in graders_named(ctx, "no_new_skips"):
        glob = args.get("glob", DEFAULT_SKIP_GLOB)
        if not isinstance(glob, str):
            continue
        if any(fnmatch.fnmatch(rel, glob) for rel in fixture):
            continue
        yield ctx.at_node(
            "ES504",
            f"no_new_skips glob {glob!r} matches no fixture file, so it counts no markers and "
            "passes whatever skips the agent adds",
            _arg_node(ctx, index, "glob") or ctx.node(("graders", index, "name")) or node,
        )


@rule("ES505", "bound-cannot-break", "warning")
def bound_cannot_break(ctx: TaskContext) -> Iterator[Diagnostic]:
    """A `requires` bound that no run can break.

    ## What it checks
    `requires.steps.max` at or above `max_steps` (default 25): the loop stops at
    `max_steps`, so the run never exceeds it. Any bound whose `min` is 0 and has no `max`:
    counters are never negative.

    ## Why it matters
    The bound reads as a requirement (a cost ceiling, a minimum of events) and passes every
    run, so the task asserts less than its file says.

    ## Example
    ```json
    {"max_steps": 20, "requires": {"steps": {"max": 30}, "denied_calls": {"min": 0}}}
    ```

    ## Fix
    Lower `steps.max` below `max_steps`; make a `min` at least 1 (or delete the bound).
    """
    requires = ctx.data.get("requires")
    if not isinstance(requires, dict):
        return
    max_steps = ctx.data.get("max_steps", DEFAULT_MAX_STEPS)
    steps = requires.get("steps")
    if isinstance(steps, dict) and _int(steps.get("max")) and _int(max_steps):
        if steps["max"] >= max_steps:
            yield ctx.at_node(
                "ES505",
                f"requires.steps.max is {steps['max']} but the loop stops at max_steps "
                f"{max_steps}, so no run can break this bound",
                ctx.node(("requires", "steps", "max")),
            )
    for counter, bound in requires.items():
        if not isinstance(bound, dict):
            continue
        low = bound.get("min")
        if _int(low) and low == 0 and "max" not in bound:
            yield ctx.at_node(
                "ES505",
                f"requires.{counter} has min 0 and no max; a counter is never negative, so "
                "the bound passes for every run",
                ctx.node(("requires", counter, "min")),
            )


def _int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@rule("ES506", "checked-path-missing", "warning")
def checked_path_missing(ctx: TaskContext) -> Iterator[Diagnostic]:
    """A file check points at a path in neither fixture/ nor solution/.

    ## What it checks
    Each path a built-in grader reads by name, as the grader's record declares it (the
    grader library page lists them): `path` of `file_matches`/`file_contains`/`delegates_to`,
    each element of `paths` of `paths_exist` and `pattern_count`, exists in `fixture/` or
    `solution/` (a folder counts where the grader takes one, as `paths_exist` does). holdout/
    does not: graders read the end state sealed before it is staged.

    ## Why it matters
    A missing file reads as "": `should_match: false` / `should_contain: false` then pass
    always, a `maximum` count passes always, and the positive forms fail even on the
    reference. Usually the path has a typo.

    ## Example
    ```json
    {"name": "endstate.evals.graders:file_contains",
     "args": {"path": "chunker/cor.py", "text": "len(items), size"}}
    ```

    ## Fix
    Point at the file the fixture or the solution really holds.
    """
    files = set(ctx.files(FIXTURE_DIR)) | set(ctx.files(SOLUTION_DIR))
    entries = set(ctx.tree(FIXTURE_DIR)) | set(ctx.tree(SOLUTION_DIR))
    for index, name, args, _node in ctx.grader_entries():
        short = builtin_name(name)
        argument = PATH_ARGUMENTS.get(short or "")
        if argument is None:
            continue
        key = argument.name
        value = args.get(key)
        items = (
            _str_items(value)
            if argument.many
            else ([(None, value)] if isinstance(value, str) else [])
        )
        for i, path in items:
            rel = norm_path(path)
            pool = entries if argument.folders else files
            if rel in pool:
                continue
            at = _arg_node(ctx, index, key) if i is None else _arg_node(ctx, index, key, i)
            yield ctx.at_node(
                "ES506",
                f"{short} checks {path!r}, which is in neither fixture/ nor solution/; a "
                'missing file reads as "", so the check cannot tell work from no work',
                at,
            )


@rule("ES507", "test-folder-missing")
def test_folder_missing(ctx: TaskContext) -> Iterator[Diagnostic]:
    """The test command points at a folder (or module) that does not exist.

    ## What it checks
    For each readable test command (`command_succeeds`'s `command`, `tests_pass`'s
    `start_dir`/`top_level_dir`): the `cd` folder, unittest's `-s`/`-t` folders, named
    unittest modules and pytest paths exist in `fixture/` or `holdout/`. The holdout counts
    because it is staged before the command runs at grading (a task may hold every test
    back); solution/ does not, as an agent is not told to create the folder.

    ## Why it matters
    The command fails on every end state, the reference's included, or (with some runners
    and versions) runs no test and exits 0: either way it does not measure the work.

    ## Example
    ```json
    {"command": "python -m unittest discover -s test -t . -q"}
    ```
    when the fixture's tests are in `tests/`.

    ## Fix
    Name the folder the tests are in.
    """
    trees = {**ctx.tree(FIXTURE_DIR), **ctx.tree(HOLDOUT_DIR)}
    dirs = {rel for rel, e in trees.items() if e.is_dir}
    files = {rel for rel, e in trees.items() if not e.is_dir}
    for index, args, cmd in test_commands(ctx):
        if not cmd.known:
            continue
        is_tests_pass = "command" not in args
        missing: list[str] = [f"{f}/" for f in cmd.folders if f not in dirs]
        if cmd.runner == "pytest":
            missing += [t for t in cmd.targets if t not in dirs and t not in files and t != "."]
        missing += missing_module_targets(files, cmd)
        if not missing:
            continue
        at = _arg_node(ctx, index, "command")
        if is_tests_pass:
            key = (
                "start_dir"
                if any(m.rstrip("/") == cmd.start_dir for m in missing)
                else ("top_level_dir")
            )
            at = _arg_node(ctx, index, key) or ctx.node(("graders", index, "name"))
        yield ctx.at_node(
            "ES507",
            f"the test command points at {', '.join(missing)}, in neither fixture/ nor "
            "holdout/; it fails (or runs nothing) on every end state",
            at,
        )
