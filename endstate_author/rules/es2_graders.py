"""ES2 — graders: names, resolution, the contract and their args."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from endstate_author.engine.argtypes import check, parse_annotation
from endstate_author.engine.catalogue import (
    GraderInfo,
    ParamInfo,
    canonical_name,
    split_name,
)
from endstate_author.engine.context import TaskContext
from endstate_author.engine.declare import rule
from endstate_author.engine.diagnostics import Diagnostic, Fix, TextEdit, describe_json
from endstate_author.engine.jsonpos import JNode
from endstate_author.engine.suggest import did_you_mean, suggestion_phrase, unique_suggestion
from endstate_harness.graders import FORBIDDEN_PARAMETERS, pyast

GRADERS = "graders"


def _raw_entries(ctx: TaskContext) -> Iterator[tuple[int, Any, JNode]]:
    """(index, decoded entry, node) for every entry of ``graders``, whatever its shape."""
    graders = ctx.data.get(GRADERS)
    node = ctx.node((GRADERS,))
    if not isinstance(graders, list) or node is None or node.kind != "array":
        return
    for i, entry in enumerate(graders):
        if i < len(node.items):
            yield i, entry, node.items[i]


def _name_node(ctx: TaskContext, index: int, entry: JNode) -> JNode:
    return ctx.node((GRADERS, index, "name")) or entry


def _replace_fix(ctx: TaskContext, node: JNode | None, value: str, title: str) -> Fix | None:
    """Replace a grader name by the one suggestion there is: safe for ``lint --fix``, since
    the name as written cannot load and nothing else was close enough to be meant."""
    if node is None:
        return None
    edit = TextEdit(ctx.manifest_path, node.start, node.end, json.dumps(value))
    return Fix(title=title, edits=(edit,), safe=True)


def _short(info: GraderInfo) -> str:
    return info.name


# ----- ES201 ----------------------------------------------------------------------------------


@rule("ES201", "bad-grader-name")
def bad_grader_name(ctx: TaskContext) -> Iterator[Diagnostic]:
    """A grader's name is not a `module:function` path (or is missing, or not a string).

    ## What it checks
    Each entry of `graders` has a `name` that is a string of the form `module:function`
    (a last-dot `module.function` is accepted too, as endstate does), where the module is a
    dotted path of Python identifiers and the function is one identifier. An entry that is
    not an object at all is ES102's.

    ## Why it matters
    The runner imports the module and takes the function from it; a name of another shape
    cannot be imported, so the task fails at load before any check runs. A bare
    `command_succeeds` is the usual slip: the module part is missing.

    ## Example
    ```json
    {"name": "command_succeeds", "args": {"command": "python -m unittest -q"}}
    ```

    ## Fix
    Write the full path, e.g. `endstate.evals.graders:command_succeeds`. When the message
    suggests exactly one name, the editor offers it as a quick fix.
    """
    for i, entry, node in _raw_entries(ctx):
        if not isinstance(entry, dict):
            continue
        if "name" not in entry:
            yield ctx.at_node(
                "ES201",
                f"graders[{i}] has no `name`; without a `module:function` path the runner "
                "has nothing to call, so the task cannot load",
                node,
            )
            continue
        name = entry["name"]
        value_node = ctx.node((GRADERS, i, "name"))
        if not isinstance(name, str):
            yield ctx.at_node(
                "ES201",
                f"graders[{i}].name must be a string `module:function` path, not "
                f"{describe_json(name)}; the task cannot load",
                value_node,
            )
            continue
        if split_name(name) is not None:
            continue
        suggestions = ctx.catalogue.lookup(name).suggestions
        hint = suggestion_phrase(suggestions)
        fix = None
        if len(suggestions) == 1:
            fix = _replace_fix(ctx, value_node, suggestions[0], f"use {suggestions[0]!r}")
        why = _name_problem(name)
        yield ctx.at_node(
            "ES201",
            f"grader name {name!r} is not a `module:function` path ({why}){hint}; the runner "
            "cannot import it, so the task fails before any check runs",
            value_node,
            fix=fix,
        )


def _name_problem(name: str) -> str:
    if not name.strip():
        return "it is empty"
    if name != name.strip():
        return "it has spaces around it"
    _module, sep, attribute = name.partition(":")
    if not sep and "." not in name:
        return "it has no module part"
    if sep and ":" in attribute:
        return "it has more than one ':'"
    if sep and not attribute:
        return "nothing follows the ':'"
    return "each part must be a Python identifier"


# ----- ES202 ----------------------------------------------------------------------------------


@rule("ES202", "grader-not-found")
def grader_not_found(ctx: TaskContext) -> Iterator[Diagnostic]:
    """A grader cannot be found: no such module, or no such function in it.

    ## What it checks
    Built-in names (`endstate.evals.graders:<x>`, `endstate_harness.graders:<x>`) against
    the grader library; the suite's own modules (`mytasks.graders:no_secrets`) are looked up
    as files, in order, in the task's folder, the suite folder, the project root and the
    `grader-paths` of config, then among the installed packages, and read with `ast` —
    never imported, so a module that prints, writes or raises at import is safe to lint.
    A module with a syntax error is reported here too: the runner's import would fail.
    A name lint cannot see through (a `from x import *`, a module `__getattr__`) is given
    the benefit of the doubt.

    ## Why it matters
    The runner resolves every grader before it runs any; one it cannot find fails the whole
    task at load, for every agent, and the failure looks like the agent's.

    ## Example
    ```json
    {"name": "endstate.evals.graders:command_succeed"}
    ```

    ## Fix
    Use the name the message suggests (`command_succeeds`), or put the module where the
    lookup searches (the message lists the folders), or add its folder to `grader-paths`.
    """
    for i, name, _args, node in ctx.grader_entries():
        if split_name(name) is None:
            continue  # ES201
        found = ctx.catalogue.lookup(name)
        if found.ok:
            continue
        value_node = _name_node(ctx, i, node)
        fix = None
        if len(found.suggestions) == 1:
            better = found.suggestions[0]
            fix = _replace_fix(ctx, value_node, better, f"use {better!r}")
        hint = ""
        if found.suggestions and "did you mean" not in (found.error or "") and "name it" not in (
            found.error or ""
        ):
            hint = suggestion_phrase(found.suggestions)
        yield ctx.at_node(
            "ES202",
            f"grader {name!r} cannot be found: {found.error}{hint}; the runner fails to "
            "resolve it, so the task fails before any check runs",
            value_node,
            fix=fix,
        )


# ----- ES203–ES205: the contract ---------------------------------------------------------------


def _contract_problems(info: GraderInfo) -> Iterator[tuple[str, str, str]]:
    """(code, message at the task, message at the def) for each breach of §3."""
    fn = info.function
    params = info.params
    if not params:
        yield (
            "ES203",
            f"{_short(info)} takes no parameters; a grader takes the sandbox as its first, "
            "positional parameter, so endstate refuses to call it",
            f"grader {fn}() takes no parameters; a grader takes `sandbox` first (positional), "
            "so endstate refuses to call it",
        )
    else:
        first = params[0]
        problem = None
        if first.name != "sandbox":
            problem = f"its first parameter is {first.name!r}, not `sandbox`"
        elif first.kind == "keyword":
            problem = (
                "its `sandbox` is keyword-only (after `*`), but the runner passes it by position"
            )
        elif first.kind == "var_positional":
            problem = "it takes `*sandbox`, which collects a tuple instead of the sandbox"
        elif first.kind == "var_keyword":
            problem = "it takes `**sandbox`, which cannot receive the sandbox by position"
        if problem is not None:
            yield (
                "ES203",
                f"{_short(info)} breaks the grader contract: {problem}; endstate refuses a "
                "grader whose first parameter is not a positional `sandbox`",
                f"grader {fn}: {problem}; endstate refuses a grader whose first parameter is "
                "not a positional `sandbox`",
            )
    for p in params[1:]:
        if p.name in FORBIDDEN_PARAMETERS:
            yield (
                "ES204",
                f"{_short(info)} takes {p.name!r}; a grader judges the end state, never the "
                "agent's transcript or output, so endstate refuses to resolve it",
                f"grader {fn} takes {p.name!r}; a grader judges the end state, never the "
                "agent's transcript or output, so endstate refuses to resolve it",
            )
    for p in params[1:]:
        if p.kind == "var_keyword":
            yield (
                "ES205",
                f"{_short(info)} takes **{p.name}, which accepts any keyword (the transcript "
                "included) and defeats the parameter check; endstate refuses it",
                f"grader {fn} takes **{p.name}, which accepts any keyword (the transcript "
                "included) and defeats the parameter check; endstate refuses it",
            )


def _contract(ctx: TaskContext, code: str) -> Iterator[Diagnostic]:
    shown: set[tuple[str, str]] = set()
    for i, name, _args, node in ctx.grader_entries():
        info = ctx.resolve(name)
        if info is None or not info.signature_known:
            continue
        for found_code, at_task, at_def in _contract_problems(info):
            if found_code != code:
                continue
            yield ctx.at_node(code, at_task, _name_node(ctx, i, node))
            if (
                info.builtin
                or info.file is None
                or (at_def, str(info.file)) in shown
                or not ctx.catalogue.is_suite_file(info.file)
            ):
                continue
            shown.add((at_def, str(info.file)))
            yield ctx.at_file(
                code, at_def, info.file, line=info.line, column=info.column,
                end_line=info.end_line, end_column=info.end_column,
            )


@rule("ES203", "sandbox-not-first")
def sandbox_not_first(ctx: TaskContext) -> Iterator[Diagnostic]:
    """A grader's first parameter is not a positional `sandbox`.

    ## What it checks
    The resolved grader's signature (read from its source): the first parameter must be
    named `sandbox` and be positional — not missing, misnamed, keyword-only (after `*`), or
    `*sandbox`/`**sandbox`. Shown at the grader's name in task.json and at its `def` line.

    ## Why it matters
    The runner calls `grader(sandbox, **args)`. endstate refuses a grader whose first
    parameter is not `sandbox` when it resolves it, so the task fails at load for every
    agent; the contract is what guarantees a grader sees only the end state.

    ## Example
    ```python
    def no_secrets(tree, *, pattern: str = "sk-"): ...
    ```

    ## Fix
    Make the first parameter `sandbox` and positional:
    `def no_secrets(sandbox, *, pattern: str = "sk-")`.
    """
    yield from _contract(ctx, "ES203")


@rule("ES204", "forbidden-parameter")
def forbidden_parameter(ctx: TaskContext) -> Iterator[Diagnostic]:
    """A grader takes a forbidden parameter (`messages`, `transcript`, `history`, ...).

    ## What it checks
    No parameter of the resolved grader is named `messages`, `transcript`, `history`,
    `result`, `run_result`, `final_text`, `response` or `conversation`. Shown at the
    grader's name in task.json and at its `def` line.

    ## Why it matters
    Those names would let the grader read what the agent *said* instead of what it *did*,
    which turns an end-state eval back into a fluency test. endstate refuses such a grader
    when it resolves it, so the task fails at load.

    ## Example
    ```python
    def graded(sandbox, transcript): ...
    ```

    ## Fix
    Judge the end state through the sandbox (`read_text`, `changed_paths`, `run`); if the
    parameter is innocent, rename it.
    """
    yield from _contract(ctx, "ES204")


@rule("ES205", "var-keyword-grader")
def var_keyword_grader(ctx: TaskContext) -> Iterator[Diagnostic]:
    """A grader takes `**kwargs`, which defeats the parameter check.

    ## What it checks
    No parameter after `sandbox` is a `**` parameter. Shown at the grader's name in
    task.json and at its `def` line.

    ## Why it matters
    The forbidden-name check (ES204) looks at parameter names; `**kwargs` accepts any name,
    the transcript included, so endstate refuses it. It also hides typos in `args`: every
    misspelled argument is silently swallowed.

    ## Example
    ```python
    def check(sandbox, **options): ...
    ```

    ## Fix
    Name every keyword argument the grader takes: `def check(sandbox, *, path: str)`.
    """
    yield from _contract(ctx, "ES205")


# ----- ES206–ES208: args against the signature --------------------------------------------------


def _judged(ctx: TaskContext) -> Iterator[tuple[int, str, dict[str, Any], JNode, GraderInfo]]:
    for i, name, args, node in ctx.grader_entries():
        info = ctx.resolve(name)
        if info is not None and info.signature_known and info.params:
            yield i, name, args, node, info


def _takes(info: GraderInfo) -> list[ParamInfo]:
    return [p for p in info.params[1:] if p.by_keyword]


@rule("ES206", "unknown-argument")
def unknown_argument(ctx: TaskContext) -> Iterator[Diagnostic]:
    """`args` names an argument the grader does not take.

    ## What it checks
    Each key of a grader's `args` against the keyword arguments of the resolved grader
    (after `sandbox`), with the nearest name. `sandbox` itself is never an argument: the
    runner passes it. A grader with `**kwargs` takes any key (ES205 reports that instead).

    ## Why it matters
    `args` are bound as keyword arguments; an unknown one makes the call fail with
    "unexpected keyword argument", so the task fails for every agent — or, with a grader
    that has a default for the intended argument, the typo would be the difference
    between the check you wrote and the one that runs.

    ## Example
    ```json
    {"name": "endstate.evals.graders:files_unchanged", "args": {"path": ["tests/test_x.py"]}}
    ```

    ## Fix
    Use the argument's real name (`paths`); the editor offers the rename when the
    suggestion is unique and that key is not already present.
    """
    for i, _name, args, _node, info in _judged(ctx):
        has_var_kw = any(p.kind == "var_keyword" for p in info.params)
        takes = [p.name for p in _takes(info)]
        for key in args:
            path = (GRADERS, i, "args", key)
            if key == info.params[0].name:
                yield ctx.at_key(
                    "ES206",
                    f"args names {key!r}, but the runner passes the sandbox itself; the call "
                    "fails with 'got multiple values', so the task fails before any check runs",
                    path,
                )
                continue
            if has_var_kw:
                continue
            param = info.param(key)
            if param is not None and param.by_keyword:
                continue
            if param is not None and param.positional_only:
                yield ctx.at_key(
                    "ES206",
                    f"{info.name} takes {key!r} by position only, and args are passed by "
                    "keyword; the call fails, so the task fails before any check runs",
                    path,
                )
                continue
            free = [t for t in takes if t not in args]
            suggestion = unique_suggestion(key, free)
            fix = None
            pair = ctx.pair(path)
            if suggestion and pair is not None:
                fix = Fix(
                    title=f"rename {key!r} to {suggestion!r}",
                    edits=(TextEdit(ctx.manifest_path, pair.key_node.start, pair.key_node.end,
                                    json.dumps(suggestion)),),
                    safe=True,  # one unambiguous did-you-mean: the argument as written fails
                )
            hint = did_you_mean(key, takes)
            known = f"it takes {', '.join(takes)}" if takes else "it takes no arguments"
            yield ctx.at_key(
                "ES206",
                f"{info.name} takes no argument {key!r}{hint} ({known}); the call fails with "
                "an unexpected keyword argument, so the task fails before any check runs",
                path,
                fix=fix,
            )


@rule("ES207", "missing-argument")
def missing_argument(ctx: TaskContext) -> Iterator[Diagnostic]:
    """`args` misses an argument the grader requires.

    ## What it checks
    Every parameter of the resolved grader after `sandbox` that has no default must be
    given in `args`. Reported at `args` (at the grader's name when there is no `args`).

    ## Why it matters
    The call fails with "missing required argument", so the task fails for every agent
    before any check runs — a task that can never pass measures nothing.

    ## Example
    ```json
    {"name": "endstate.evals.graders:files_unchanged"}
    ```

    ## Fix
    Give the argument, e.g. `"args": {"paths": ["tests/test_chunk.py"]}`.
    """
    for i, _name, args, node, info in _judged(ctx):
        at = ctx.node((GRADERS, i, "args")) or _name_node(ctx, i, node)
        for p in info.params[1:]:
            if not p.required or p.kind in ("var_keyword", "var_positional"):
                continue
            if p.name in args and not p.positional_only:
                continue
            if p.name in FORBIDDEN_PARAMETERS:
                continue  # ES204 already refuses the grader for it
            typed = f" ({p.annotation})" if p.annotation else ""
            if p.positional_only:
                why = "it is positional-only while args are passed by keyword, so none can give it"
            else:
                why = "args does not give it"
            yield ctx.at_node(
                "ES207",
                f"{info.name} requires {p.name!r}{typed} and {why}; the call fails with a "
                "missing argument, so the task fails before any check runs",
                at,
            )


@rule("ES208", "argument-type")
def argument_type(ctx: TaskContext) -> Iterator[Diagnostic]:
    """An argument has the wrong type for the grader's annotation.

    ## What it checks
    Each value in `args` against the annotation of the parameter it binds (read from the
    source): `str`, `int`, `float` (an integer is fine), `bool`, `list[str]`,
    `Sequence[str]`, `tuple[str, ...]`, `dict[str, X]`, `X | None`, `Optional`, `Union`,
    `Literal`. Unknown annotations are accepted. A string is **not** a sequence of strings
    here, and `true` is not an integer. `null` is accepted for a parameter whose default is
    `None`. The finding points at the exact element that does not fit.

    ## Why it matters
    Nothing converts `args`. The classic: `"paths": "tests/test_x.py"` for `paths:
    list[str]` — a string iterates by character, so `files_unchanged` compares the files
    `t`, `e`, `s`... which are missing before and after, and the check passes vacuously
    while the real test file goes unguarded.

    ## Example
    ```json
    {"name": "endstate.evals.graders:files_unchanged", "args": {"paths": "tests/test_x.py"}}
    ```

    ## Fix
    Write the value with the annotated type: `"paths": ["tests/test_x.py"]` (the editor
    offers to wrap a lone string in a list).
    """
    for i, _name, args, _node, info in _judged(ctx):
        for key, value in args.items():
            param = info.param(key)
            if param is None or not param.by_keyword or key == info.params[0].name:
                continue
            if not param.annotation:
                continue
            if value is None and param.default == "None":
                continue  # ``x: str = None``: null is what the default means
            mismatch = check(parse_annotation(param.annotation), value)
            if mismatch is None:
                continue
            path = (GRADERS, i, "args", key, *mismatch.path)
            where = key + "".join(f"[{p}]" if isinstance(p, int) else f"[{p!r}]"
                                  for p in mismatch.path)
            got = describe_json(mismatch.value)
            if mismatch.string_as_sequence:
                node = ctx.node(path)
                fix = None
                if node is not None and ctx.raw is not None:
                    text = ctx.raw[node.start : node.end].decode("utf-8", errors="replace")
                    fix = Fix(
                        title="wrap the string in a list",
                        edits=(TextEdit(ctx.manifest_path, node.start, node.end, f"[{text}]"),),
                        safe=False,
                    )
                yield ctx.at_value(
                    "ES208",
                    f"args.{where} is {got}, but {info.name} takes {key}: {param.annotation} "
                    f"({mismatch.expected}); a string iterates by character, so the grader "
                    "checks each single character as an item and can pass vacuously",
                    path,
                    fix=fix,
                )
                continue
            yield ctx.at_value(
                "ES208",
                f"args.{where} is {got}, but {info.name} takes {key}: {param.annotation} "
                f"(here: {mismatch.expected}); nothing converts args, so the grader misreads "
                "it or fails when it runs",
                path,
            )


# ----- ES209, ES210 ---------------------------------------------------------------------------


@rule("ES209", "no-graders")
def no_graders(ctx: TaskContext) -> Iterator[Diagnostic]:
    """`graders` is missing or empty.

    ## What it checks
    task.json has a `graders` list with at least one entry. (A `graders` of the wrong type
    is ES102's.)

    ## Why it matters
    The graders are the task's verdict: with none, nothing can fail, so the task measures
    nothing. endstate refuses to load it.

    ## Example
    ```json
    {"id": "fix-chunk", "graders": []}
    ```

    ## Fix
    Add the four assertions every task should make: `command_succeeds` (or
    `endstate_harness.graders:tests_pass`), `files_unchanged` on the tests, `no_new_skips`
    and `changed_paths_within`.
    """
    if GRADERS not in ctx.data:
        root = ctx.doc.root if ctx.doc is not None else None
        message = (
            "task.json has no `graders`; a task with nothing to grade cannot fail, so it "
            "measures nothing (endstate refuses to load it)"
        )
        if root is not None:
            yield ctx.at_node("ES209", message, JNode(root.kind, root.start, root.start + 1))
        else:
            yield ctx.at_file("ES209", message, ctx.manifest_path)
        return
    graders = ctx.data[GRADERS]
    if isinstance(graders, list) and not graders:
        yield ctx.at_value(
            "ES209",
            "`graders` is empty; a task with nothing to grade cannot fail, so it measures "
            "nothing (endstate refuses to load it)",
            (GRADERS,),
        )


def _canon(value: Any) -> Any:
    """JSON value with numbers compared by value (1 == 1.0) but booleans kept apart."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, list):
        return [_canon(v) for v in value]
    if isinstance(value, dict):
        return {k: _canon(v) for k, v in value.items()}
    return repr(value)


def _with_defaults(args: dict[str, Any], info: GraderInfo | None) -> dict[str, Any]:
    """``args`` plus the grader's literal defaults, so `{}` equals `{"glob": "*test*.py"}`."""
    out = dict(args)
    if info is None or not info.signature_known:
        return out
    for p in info.params[1:]:
        if p.name in out or p.default is None or not p.by_keyword:
            continue
        try:
            value = pyast.literal_eval(p.default)
            json.dumps(value)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            continue
        out[p.name] = value
    return out


@rule("ES210", "duplicate-grader", "warning")
def duplicate_grader(ctx: TaskContext) -> Iterator[Diagnostic]:
    """The same grader with the same args appears twice.

    ## What it checks
    Grader entries are compared by name — `module.function` equals `module:function`, and
    `endstate.evals.graders:x` equals `endstate_harness.graders:x` — and by args as JSON
    values, with the grader's defaults filled in (`{}` equals `{"glob": "*test*.py"}` for
    `no_new_skips`).

    ## Why it matters
    The second copy adds no check. It is almost always a copy-paste whose edit was
    forgotten: the check the author meant to add (another file pinned, another command) is
    missing.

    ## Example
    Two entries `{"name": "endstate.evals.graders:no_new_skips"}`.

    ## Fix
    Delete the copy, or change it into the check you meant.
    """
    seen: dict[tuple[str, str], int] = {}
    for i, name, args, node in ctx.grader_entries():
        canon = canonical_name(name)
        if canon is None:
            continue
        filled = _with_defaults(args, ctx.resolve(name))
        try:
            key = (canon, json.dumps(_canon(filled), sort_keys=True))
        except (TypeError, ValueError):
            continue
        first = seen.setdefault(key, i)
        if first != i:
            yield ctx.at_node(
                "ES210",
                f"graders[{i}] repeats graders[{first}] ({name} with the same args); the copy "
                "adds no check, so the one you meant to add is probably missing",
                _name_node(ctx, i, node),
            )
