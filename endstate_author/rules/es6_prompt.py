"""ES6 — the prompt and the graders agree, found statically."""

from __future__ import annotations

import ast
import posixpath
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property

from endstate_author.engine.context import TaskContext
from endstate_author.engine.declare import rule
from endstate_author.engine.diagnostics import Diagnostic, Fix, TextEdit
from endstate_author.engine.discovery import builtin_name, is_test_file_name
from endstate_author.rules.es3_assertions import graders_named
from endstate_author.rules.reached import reached_files, tests_of

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
_TEST_DIRS = frozenset({"tests", "test", "testing"})
_CODE_SPAN = re.compile(r"`([^`\n]+)`")
_CHANGE = re.compile(
    r"\b(change|changes|fix|fixes|make|add|adds|update|rename|modify|implement|refactor|"
    r"move|edit|rewrite|support|extend|replace|correct)\b",
    re.IGNORECASE,
)
_REFERENCE = frozenset(
    {"in", "from", "of", "by", "per", "see", "following", "with", "under", "against", "like",
     "via", "through", "using", "than", "as"}
)  # fmt: skip
_NEGATION = re.compile(r"\b(not|don't|do not|never|without|leave|unchanged|untouched)\b", re.I)


def _parts(name: str) -> list[str]:
    return [p.lower() for chunk in name.split("_") for p in _CAMEL.findall(chunk) if p]


@dataclass
class _Prompt:
    text: str

    @cached_property
    def words(self) -> list[str]:
        return _WORD.findall(self.text)

    @cached_property
    def lower_words(self) -> list[str]:
        # camelCase and snake_case in the prose are split into their words too
        return [p for w in self.words for p in _parts(w)]

    @cached_property
    def exact(self) -> set[str]:
        return set(self.words) | {w.lower() for w in self.words}

    def names(self, name: str) -> bool:
        """The prompt gives ``name``: as a word, or its words in a row (any case)."""
        if name in self.exact or name.lower() in self.exact:
            return True
        parts = _parts(name)
        if not parts:
            return True
        words = self.lower_words
        n = len(parts)
        return any(words[i : i + n] == parts for i in range(len(words) - n + 1))


def _prompt(ctx: TaskContext) -> _Prompt | None:
    text = ctx.prompt_md
    if text is None and ctx.is_object:
        value = ctx.data.get("prompt")
        text = value if isinstance(value, str) else None
    return _Prompt(text) if text and text.strip() else None


def _fixture_words(ctx: TaskContext) -> set[str]:
    """Every identifier written anywhere in the fixture's text files, and every path part."""
    words: set[str] = set()
    for rel in ctx.files("fixture"):
        for part in rel.split("/"):
            words.add(part)
            words.add(part.rsplit(".", 1)[0])
        text = ctx.read_tree_text("fixture", rel)
        if text is not None:
            words.update(_WORD.findall(text))
    return words


def _package_tops(ctx: TaskContext) -> set[str]:
    """Top-level modules and packages of the code under test (fixture and solution)."""
    tops: set[str] = set()
    for tree in ("fixture", "solution"):
        for rel in ctx.files(tree):
            if not rel.endswith(".py"):
                continue
            first = rel.split("/", 1)[0]
            name = first[:-3] if first.endswith(".py") else first
            if name in _TEST_DIRS or is_test_file_name(first) or not name.isidentifier():
                continue
            if "/" in rel or first.endswith(".py"):
                tops.add(name)
    return tops


@dataclass(frozen=True)
class _Use:
    name: str
    what: str
    line: int
    column: int  # 0-based, characters


def _column(lines: list[str], line: int, start: int, name: str) -> int:
    text = lines[line - 1] if 0 < line <= len(lines) else ""
    found = text.find(name, start)
    return found if found >= 0 else start


_IMPLICIT = frozenset({
    "__name__", "__qualname__", "__doc__", "__module__", "__class__", "__dict__", "__file__",
    "__spec__", "__path__", "__package__", "__loader__", "__annotations__", "__wrapped__",
})  # fmt: skip
"""Attributes Python gives every module, class or function: nobody has to write them."""


def _uses(text: str, nodes: list[ast.AST], tops: set[str],
          imports: Sequence[ast.Import | ast.ImportFrom]) -> Iterator[_Use]:
    """The package's names a test file relies on: imported modules and names, attributes
    read off them, keyword arguments passed to them (``nodes``: the file's attributes and
    calls, in the order ast.walk lists them; ``imports``: its import statements, likewise)."""
    if text.isascii() and not any(top in text for top in tops):
        return  # an import of the package writes its name (in ASCII text, letter for letter)
    lines = text.splitlines()
    aliases: dict[str, str] = {}  # local name → what it is
    for node in imports:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in tops:
                    for part in alias.name.split(".")[1:]:
                        yield _Use(part, "module", node.lineno,
                                   _column(lines, node.lineno, node.col_offset, part))  # fmt: skip
                    aliases[alias.asname or alias.name.split(".")[0]] = "module"
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.split(".")[0] not in tops:
                continue
            for part in node.module.split(".")[1:]:
                yield _Use(part, "module", node.lineno,
                           _column(lines, node.lineno, node.col_offset, part))  # fmt: skip
            for alias in node.names:
                if alias.name == "*":
                    continue
                line = getattr(alias, "lineno", node.lineno)
                col = getattr(alias, "col_offset", node.col_offset)
                yield _Use(alias.name, "name", line, _column(lines, line, col, alias.name))
                aliases[alias.asname or alias.name] = "name"
    if not aliases:
        return  # every use below is of an alias
    for item in nodes:
        if isinstance(item, ast.Attribute) and isinstance(item.value, ast.Name):
            if item.value.id in aliases and item.attr not in _IMPLICIT:
                line = item.end_lineno or item.lineno
                col = (item.end_col_offset or 0) - len(item.attr)
                yield _Use(item.attr, "attribute", line, _column(lines, line, col, item.attr))
        elif isinstance(item, ast.Call):
            func = item.func
            target = func.id if isinstance(func, ast.Name) else None
            if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
                target = func.value.id
            if target not in aliases:
                continue
            for keyword in item.keywords:
                if keyword.arg is None:
                    continue
                line = getattr(keyword, "lineno", item.lineno)
                col = getattr(keyword, "col_offset", item.col_offset)
                yield _Use(keyword.arg, "keyword argument", line,
                           _column(lines, line, col, keyword.arg))  # fmt: skip


@rule("ES601", "test-name-not-in-prompt", "warning")
def test_name_not_in_prompt(ctx: TaskContext) -> Iterator[Diagnostic]:
    """A holdout test relies on a name of the package that neither the fixture has nor the
    prompt gives.

    ## What it checks
    The holdout's Python files are read with `ast`: every module, function, class, method
    or keyword argument of the package under test they import, read off an imported name or
    pass to one (`from shop.money import format_money`, `money.parse(...)`,
    `convert(x, unit="F")`). A name counts as given when the fixture already has it (it is
    written anywhere in fixture/, the visible tests included) or the prompt names it — in a
    code span, in prose, or as its words in a row (`format_money` ← "format money").

    ## Why it matters
    The agent sees the prompt and the fixture, never the holdout. A hidden test that calls
    `to_kelvin()` when the prompt says "add Kelvin support" fails every agent that picked
    another name: the task measures guessing, not the work.

    ## Example
    prompt.md: "Add Kelvin support to the converter." — holdout:
    `from temps.convert import to_kelvin`.

    ## Fix
    Name it in prompt.md ("add `to_kelvin(celsius)` to `temps/convert.py`"), or test through
    a name the fixture already has. The editor offers to add the name to prompt.md.
    """
    prompt = _prompt(ctx)
    if prompt is None:
        return
    tops = _package_tops(ctx)
    if not tops:
        return
    known: set[str] | None = None  # read at the first use to judge
    for rel in sorted(ctx.files("holdout")):
        if not rel.endswith(".py"):
            continue
        text = ctx.read_tree_text("holdout", rel)
        if text is None or ctx.python_module("holdout", rel) is None:
            continue
        seen: set[str] = set()
        nodes = ctx.python_index("holdout", rel).of(ast.Attribute, ast.Call)  # all _uses reads
        imports = ctx.python_imports("holdout", rel)
        for use in sorted(_uses(text, nodes, tops, imports), key=lambda u: (u.line, u.column)):
            if known is None:
                known = _fixture_words(ctx)
            if use.name in seen or use.name in known or prompt.names(use.name):
                continue
            seen.add(use.name)
            file = ctx.root / "holdout" / rel
            yield ctx.at_file(
                "ES601",
                f"the holdout relies on the {use.what} `{use.name}`, which the fixture does not "
                "have and prompt.md never names: an agent cannot know to write it (name it in "
                "the prompt)",
                file,
                line=use.line,
                column=use.column + 1,
                end_column=use.column + 1 + len(use.name),
                fix=_name_in_prompt(ctx, use),
            )


def _name_in_prompt(ctx: TaskContext, use: _Use) -> Fix | None:
    """The editor's quick fix: one sentence naming ``use`` appended to prompt.md (never
    applied by ``lint --fix``: what the prompt says is the author's to word)."""
    path = ctx.root / "prompt.md"
    try:
        if path.is_symlink() or not path.is_file():
            return None
        data = path.read_bytes()
    except OSError:
        return None
    lead = b"" if data.endswith(b"\n") or not data else b"\n"
    sentence = f"\nThe tests use the {use.what} `{use.name}`: keep that name.\n"
    return Fix(
        f"Name `{use.name}` in prompt.md",
        edits=(TextEdit(path, len(data), len(data), lead.decode() + sentence),),
        safe=False,
    )


def _path_named(prompt: _Prompt, rel: str) -> bool:
    rel = rel.strip("/")
    if rel in prompt.text:
        return True
    base = posixpath.basename(rel)
    stem = base.rsplit(".", 1)[0]
    if base == "__init__.py":
        folder = posixpath.basename(posixpath.dirname(rel))
        return not folder or prompt.names(folder)
    dotted = rel[:-3].replace("/", ".") if rel.endswith(".py") else None
    if base in prompt.text or (dotted and dotted in prompt.text):
        return True
    return bool(stem) and prompt.names(stem)


@rule("ES602", "path-not-in-prompt", "warning")
def path_not_in_prompt(ctx: TaskContext) -> Iterator[Diagnostic]:
    """A path a grader requires, or the solution creates, is never named by prompt.md.

    ## What it checks
    The paths of `paths_exist`, of `file_contains` / `file_matches` (when they must
    match) that the fixture lacks, and the files solution/ adds (test files aside), are
    looked for in the prompt: the path, its file name, its dotted module name or its stem
    as a word (`money/format.py` is named by `money.format`, `format.py` or "format").

    ## Why it matters
    A refactor whose grader requires `shop/pricing.py` fails every agent that put the code
    in `shop/prices.py`, though the prompt never said where: the task grades a guess.

    ## Example
    prompt.md: "Split the pricing helpers out of `shop/cart.py`." — grader:
    `paths_exist` with `["shop/pricing.py"]`.

    ## Fix
    Say the path in prompt.md ("move them to a new module `shop/pricing.py`").
    """
    prompt = _prompt(ctx)
    if prompt is None:
        return
    fixture = ctx.files("fixture")
    reported: set[str] = set()
    for short, key, flag in (
        ("paths_exist", "paths", None),
        ("file_contains", "path", "should_contain"),
        ("file_matches", "path", "should_match"),
    ):
        for index, args, _node in graders_named(ctx, short):
            if flag is not None and args.get(flag, True) is False:
                continue
            value = args.get(key)
            if isinstance(value, str):
                items: list[tuple[int | None, object]] = [(None, value)]
            elif isinstance(value, list):
                items = list(enumerate(value))
            else:  # a number, an object: a wrong argument type, which ES2xx reports
                items = []
            for i, path in items:
                if not isinstance(path, str) or path.strip("./") in fixture:
                    continue
                if path in reported or _path_named(prompt, path):
                    continue
                reported.add(path)
                where = ("graders", index, "args", key) + (() if i is None else (i,))
                yield ctx.at_value(
                    "ES602",
                    f"`{short}` requires `{path}`, which prompt.md never names: an agent "
                    "cannot know to create it there (name the path in the prompt)",
                    where,
                )
    for rel in sorted(ctx.files("solution")):
        if rel in fixture or rel in reported or is_test_file_name(rel):
            continue
        if rel.split("/", 1)[0] in _TEST_DIRS or _path_named(prompt, rel):
            continue
        yield ctx.at_file(
            "ES602",
            f"the solution creates `{rel}`, which prompt.md never names: an agent cannot "
            "know the task wants it there (name the path in the prompt)",
            ctx.root / "solution" / rel,
        )


def _sentences(text: str) -> Iterator[str]:
    """Clauses: sentences, split again at `;` and `:` (one verb governs one clause)."""
    for sentence in re.split(r"(?<=[.!?])\s+|\n\s*\n", text):
        yield from re.split(r"[;:]\s", sentence)


class _Definitions:
    """Function and class names (methods included) of the fixture's modules, and the first
    module (in listing order) that defines each. Read on demand: a module is parsed only
    when a name the prompt promises is written in it, for most prompts none."""

    def __init__(self, ctx: TaskContext) -> None:
        self.ctx = ctx
        self.modules = [
            rel for rel in ctx.files("fixture")
            if rel.endswith(".py") and not is_test_file_name(rel)
        ]  # fmt: skip
        self._names: dict[str, set[str]] = {}

    def names_in(self, rel: str) -> set[str]:
        if rel not in self._names:
            self._names[rel] = {
                node.name for node in self.ctx.python_index("fixture", rel).of(
                    ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
            }
        return self._names[rel]

    def where(self, name: str) -> str | None:
        """The first module defining ``name``; None when none does."""
        for rel in self.modules:
            text = self.ctx.read_tree_text("fixture", rel)
            if text is None or (text.isascii() and name not in text):
                continue  # a definition writes its name (in ASCII text, letter for letter)
            if name in self.names_in(rel):
                return rel
        return None


PERMITS_ONLY = frozenset({"changed_paths_within", "files_unchanged", "tree_unchanged",
                          "no_new_skips"})
"""Graders that permit or pin paths without checking any change in them: a path named there
is not graded (``changed_paths_within`` lets the promised file change; it does not ask for
the change)."""


def _graded_text(ctx: TaskContext) -> str:
    """Everything a grader that checks something, the holdout or a visible test says: the
    arguments of every grader but those that only permit or pin paths, and every text file
    of holdout/ and of the fixture's tests."""
    parts = []
    for _i, name, args, _node in ctx.grader_entries():
        if builtin_name(name) not in PERMITS_ONLY:
            parts.append(f"{name} {args!r}")
    for rel in ctx.files("holdout"):
        parts.append(rel)
        parts.append(ctx.read_tree_text("holdout", rel) or "")
    for rel in ctx.files("fixture"):
        if is_test_file_name(rel) or rel.split("/", 1)[0] in _TEST_DIRS:
            parts.append(ctx.read_tree_text("fixture", rel) or "")
    return "\n".join(parts)


@rule("ES603", "prompt-promise-ungraded", "warning")
def prompt_promise_ungraded(ctx: TaskContext) -> Iterator[Diagnostic]:
    """prompt.md asks for a change to a named function or file that nothing grades.

    ## What it checks
    A clause of prompt.md that asks for a change (fix, add, make, change, update, …; not
    "do not …") and names, in a code span, a function or class the fixture defines or a
    file the fixture has — not as a reference ("the rules in `README.md`", "as
    `parse()` does" are left alone). That name must be touched by something that grades:
    written in a grader's arguments, the holdout or a visible test; for a function, its
    module's name or any name its module defines counts too (a test may reach it through
    another). A test also touches every module it imports, every module those import in
    turn (`from pkg import render` reaches `pkg/render.py` through `pkg/__init__.py`), and
    every file whose name that code writes (a data table the converter opens). A
    `changed_paths_within` pattern does not count: it lets the file change, it does not
    check the change.

    ## Why it matters
    A promise nothing checks is a part of the task that measures nothing: an agent that
    skips it passes, and the prompt's length is spent on noise.

    ## Example
    prompt.md: "Fix `parse()` and make `render()` escape pipes." — no test or grader
    mentions `render` or its module.

    ## Fix
    Add a holdout test for the promised change, or take the promise out of the prompt.
    """
    prompt = _prompt(ctx)
    if prompt is None or ctx.category == "permissioning":
        return
    fixture = ctx.files("fixture")
    functions = _Definitions(ctx)
    graded_cache: list[tuple[str, set[str]]] = []

    def graded() -> tuple[str, set[str]]:
        """What grades (its text and words), read once, late."""
        if not graded_cache:
            text = _graded_text(ctx)
            graded_cache.append((text, set(_WORD.findall(text))))
        return graded_cache[0]

    reached_cache: list[set[str]] = []

    def reached() -> set[str]:
        """The files the tests reach (imported, or read by code they import), read late."""
        if not reached_cache:
            visible = [rel for rel in fixture
                       if is_test_file_name(rel) or rel.split("/", 1)[0] in _TEST_DIRS]
            reached_cache.append(reached_files(ctx, tests_of(ctx, visible)))
        return reached_cache[0]

    reported: set[str] = set()
    for sentence in _sentences(prompt.text):
        if not _CHANGE.search(sentence) or _NEGATION.search(sentence):
            continue
        for match in _CODE_SPAN.finditer(sentence):
            span = match.group(1)
            before = _WORD.findall(sentence[: match.start()])
            if before and before[-1].lower() in _REFERENCE:
                continue  # "the rules in `README.md`": a reference, not the thing to change
            name = span.strip().removesuffix("()").strip()
            if name in reported:
                continue
            if name in fixture:
                text, graded_words = graded()
                if name in text:
                    continue
                stem = posixpath.basename(name).rsplit(".", 1)[0]
                if stem in graded_words or name in reached():
                    continue
                what = f"the file `{name}`"
            elif name.isidentifier() and (rel := functions.where(name)) is not None:
                _text, graded_words = graded()
                stem = posixpath.basename(rel).rsplit(".", 1)[0]
                if stem in graded_words or rel in reached() or any(
                    functions.where(n) == rel for n in functions.names_in(rel) & graded_words
                ):
                    continue
                what = f"`{name}` (in {rel})"
            else:
                continue
            reported.add(name)
            at = max(0, prompt.text.find(f"`{span}`"))
            line = prompt.text.count("\n", 0, at) + 1
            column = at - (prompt.text.rfind("\n", 0, at) + 1) + 1
            yield ctx.at_file(
                "ES603",
                f"prompt.md asks for a change to {what}, but no grader, holdout or visible "
                "test touches it: an agent that skips it still passes",
                ctx.root / "prompt.md",
                line=line,
                column=column,
                end_column=column + len(span) + 2,
            )
