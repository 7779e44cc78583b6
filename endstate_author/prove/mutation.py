"""Wrong solutions nobody wrote: mutants of the reference solution, aimed at what it changes."""

from __future__ import annotations

import ast
import dataclasses
import difflib
import functools
import hashlib
import itertools
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from endstate_author.prove.mutation_edits import (
    Source,
    Statements,
    docstrings,
    mutated_statement,
    node_mutations,
    node_path,
    normalise_quiet,
    quiet,
    unchanged_tree,
)
from endstate_author.prove.mutation_equivalents import (
    Callees,
    bound_names,
    contract_text,
    raise_arguments,
)
from endstate_author.prove.mutation_operators import more_mutations
from endstate_author.prove.mutation_siblings import ModuleFacts, SiblingFinder, tree_facts
from endstate_harness.graders import pyast

PRUNED = frozenset(
    {".git", ".hg", ".svn", ".endstate", "__pycache__", ".pytest_cache", ".mypy_cache",
     ".ruff_cache", ".venv", "node_modules"}
)  # fmt: skip
"""Names the sandbox never copies (task format §1): a solution file under one is no change."""

EQUIVALENT = re.compile(r"#\s*endstate:\s*equivalent\s+(m[0-9a-f]{8})\b[ \t:,-]*(\S[^\n]*)?")
_MARKER_ONLY = re.compile(r"^[ \t]*#[ \t]*endstate:[ \t]*equivalent\b[^\n]*$")
_MARKER_TAIL = re.compile(r"[ \t]*#[ \t]*endstate:[ \t]*equivalent\b[^\n]*$")

PARTIAL_KINDS = frozenset({"revert-hunk", "drop-file"})


@dataclass(frozen=True)
class Mutant:
    """One wrong solution: the solution with ``path`` replaced by ``content`` (None: the
    file is left out, so the fixture's version, or nothing, stands)."""

    id: str
    kind: str
    path: str
    line: int
    description: str
    content: bytes | None

    @property
    def partial(self) -> bool:
        return self.kind in PARTIAL_KINDS

    def file_bytes(self, fixture: Path) -> bytes | None:
        """What the mutant's file holds in its end state: ``content``, else the fixture's
        version; None when neither has one (the file is gone)."""
        if self.content is not None:
            return self.content
        original = fixture / self.path
        return original.read_bytes() if original.is_file() else None


@dataclass
class MutantSet:
    """Every mutant of a task's solution, the ones marked equivalent (id → reason), and the
    markers that name no mutant generated (stale, or mistyped)."""

    mutants: list[Mutant]
    equivalent: dict[str, str]
    unknown_markers: list[tuple[str, int, str]]

    def selected(self, limit: int | None) -> tuple[list[Mutant], int]:
        """The mutants to run under ``--mutants limit`` (None: every one) and how many were
        left out.

        Equivalent ones are never run. Partial solutions come first (they are the likeliest
        real mistakes), then operator mutants in id order — a stable, evenly spread sample,
        which is also the order a time budget runs them in.
        """
        live = [m for m in self.mutants if m.id not in self.equivalent]
        partial = [m for m in live if m.partial]
        operators = sorted((m for m in live if not m.partial), key=lambda m: m.id)
        ordered = partial + operators
        chosen = ordered if limit is None else ordered[: max(0, limit)]
        return chosen, len(live) - len(chosen)

    def left_out(self, limit: int | None) -> list[Mutant]:
        """The live mutants ``--mutants limit`` leaves out, in run order."""
        chosen, _ = self.selected(limit)
        ids = {m.id for m in chosen}
        return [m for m in self.selected(None)[0] if m.id not in ids]


KIND_ORDER = (
    "comparison", "comparison-relax", "comparison-shift", "arithmetic", "arithmetic-other",
    "boolean", "unary", "constant", "return-none", "call-none", "remove-statement",
    "swap-if-else", "collection", "drop-argument", "remove-keyword", "swap-args",
    "sibling-constant",
)  # fmt: skip
"""The order a line's mutants take turns in: a line's first mutants are one of each kind it
has (in this order), then a second of each, and so on."""

LEADERS = 4
"""The fewest first mutants of a line: when all of a line's first ones are killed the line is
tested well, and its other mutants are sampled out (not run, never counted as survivors); when
one is not, every mutant of the line runs."""


def leader_count(mutants: int) -> int:
    """How many of a line's ``mutants`` come first: :data:`LEADERS`, or the square root of
    their number when that is more. A line of many operators has many mutants, and a fixed
    few would try ever fewer of its operators and constants; the square root grows the sample
    with the line (on compaction-quarter-boundaries, a line of 52 mutants runs 8, among them
    the one survivor a fixed four missed without the holdout). On the shipped tasks this runs
    378 of the 837 mutants generated (before the newer operators and the sampling: 454 of
    464, the rest marked equivalent)."""
    return max(LEADERS, math.ceil(math.sqrt(mutants)))


def line_order(mutants: list[Mutant]) -> list[Mutant]:
    """One line's mutants in their fixed order: by turn (the first of each kind, then the
    second of each, ...), then by :data:`KIND_ORDER`, then by id. Fixed by the mutants alone,
    so a line's first mutants are the same on every run (the cache and stable ids rely on
    it)."""
    rank = {kind: i for i, kind in enumerate(KIND_ORDER)}
    turn: dict[str, int] = {}
    keyed = []
    for m in sorted(mutants, key=lambda m: (rank.get(m.kind, len(rank)), m.kind, m.id)):
        keyed.append(((turn.get(m.kind, 0), rank.get(m.kind, len(rank)), m.kind, m.id), m))
        turn[m.kind] = turn.get(m.kind, 0) + 1
    return [m for _, m in sorted(keyed, key=lambda pair: pair[0])]


def leaders_and_followers(
    mutants: list[Mutant], leaders: int | None = None
) -> tuple[list[Mutant], dict[str, tuple[Mutant, ...]]]:
    """(the mutants always run: partial solutions and each line's first ones (``leaders``,
    else :func:`leader_count`), in the order given; each other mutant's id → its line's
    first ones, whose fate decides whether it runs)."""
    lines: dict[tuple[str, int], list[Mutant]] = {}
    for m in mutants:
        if not m.partial:
            lines.setdefault((m.path, m.line), []).append(m)
    follows: dict[str, tuple[Mutant, ...]] = {}
    for group in lines.values():
        ordered = line_order(group)
        count = leader_count(len(ordered)) if leaders is None else leaders
        first = tuple(ordered[:count])
        follows.update((m.id, first) for m in ordered[count:])
    return [m for m in mutants if m.id not in follows], follows


def _stable_id(*parts: str) -> str:
    return "m" + hashlib.sha1("\0".join(parts).encode(errors="surrogateescape")).hexdigest()[:8]


def _files(root: Path) -> Iterator[tuple[str, Path]]:
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if any(part in PRUNED for part in rel.parts) or path.is_symlink() or not path.is_file():
            continue
        yield rel.as_posix(), path


def _text(path: Path) -> str | None:
    try:
        return path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def without_markers(text: str) -> tuple[str, list[int]]:
    """``text`` with its ``# endstate: equivalent`` markers taken out (a line holding only a
    marker goes, a marker after code is cut off), and for each line left its number in
    ``text``: what the diff and the ids are made of, so that adding a marker anywhere changes
    no mutant."""
    kept: list[str] = []
    numbers: list[int] = []
    for number, line in enumerate(text.splitlines(keepends=True), 1):
        body = line.rstrip("\r\n")
        if _MARKER_ONLY.match(body):
            continue
        cut = _MARKER_TAIL.sub("", body)
        kept.append(cut + line[len(body):] if cut != body else line)
        numbers.append(number)
    return "".join(kept), numbers


def generate(fixture: Path, solution: Path, contract: str | None = None) -> MutantSet:
    """Every mutant of ``solution`` (an overlay) against ``fixture``, deduplicated.

    ``contract`` is what the task says of its behaviour (its prompt and tests): a raised
    exception's message is mutated only where a part of it is found there. None: read from
    the task folder holding ``fixture`` (:func:`contract_text`)."""
    modules = tree_facts([fixture, solution])
    if contract is None:
        contract = contract_text(fixture.parent, PRUNED)
    mutants: list[Mutant] = []
    markers: dict[str, str] = {}
    marker_lines: list[tuple[str, int, str]] = []
    for rel, path in _files(solution):
        after = _text(path)
        if after is None:
            continue
        for lineno, line in enumerate(after.splitlines(), 1):
            for match in EQUIVALENT.finditer(line):
                marker_lines.append((rel, lineno, match.group(1)))
                if match.group(2):
                    markers[match.group(1)] = match.group(2).strip()
        before_path = fixture / rel
        if not before_path.is_file() or before_path.is_symlink():
            mutants.extend(_file_mutants(rel, None, after, modules, contract))
        else:
            before = _text(before_path)
            if before is None or before == after:
                continue
            mutants.extend(_file_mutants(rel, before, after, modules, contract))
    seen: set[bytes | None] = set()
    unique: list[Mutant] = []
    ids: set[str] = set()
    for m in mutants:
        key = m.path.encode(errors="surrogateescape") + b"\0" + (
            m.content if m.content is not None else b"\0drop")
        if key in seen or m.id in ids:
            continue
        seen.add(key)
        ids.add(m.id)
        unique.append(m)
    unknown = [(rel, line, mid) for rel, line, mid in marker_lines if mid not in ids]
    equivalent = {mid: why for mid, why in markers.items() if mid in ids}
    return MutantSet(unique, equivalent, unknown)


@functools.lru_cache(maxsize=256)
def _file_mutants(
    rel: str, before: str | None, after: str, modules: tuple[tuple[str, ModuleFacts], ...] = (),
    contract: str = "",
) -> tuple[Mutant, ...]:
    """The mutants of one file the solution adds (``before`` None) or changes.

    Memoised by content: one prove asks three times (to plan the checks, for the notes on the
    ones skipped, for the score), and the language server on every save, while parsing every
    mutant to drop the ones that change nothing costs tens of milliseconds a file.
    """
    out: list[Mutant] = []
    if before is None:
        out.append(
            Mutant(_stable_id(rel, "drop-file"), "drop-file", rel, 1,
                   f"{rel} left out (the solution adds it)", None)
        )  # fmt: skip
        changed = set(range(1, after.count("\n") + 2))
    else:
        clean, numbers = without_markers(after)
        hunks, changed_clean = _hunks(rel, before, clean)
        for hunk in hunks:  # at the solution file's own line
            line = numbers[hunk.line - 1] if 0 < hunk.line <= len(numbers) else hunk.line
            out.append(dataclasses.replace(hunk, line=line))
        changed = {numbers[n - 1] for n in changed_clean if 0 < n <= len(numbers)}
    if rel.endswith(".py"):
        out.extend(operator_mutants(rel, after, changed, dict(modules), contract))
    return tuple(out)


def _hunks(rel: str, before: str, after: str) -> tuple[list[Mutant], set[int]]:
    """Each hunk of the diff reverted alone, and the solution's changed line numbers."""
    old = before.splitlines(keepends=True)
    new = after.splitlines(keepends=True)
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    out: list[Mutant] = []
    changed: set[int] = set()
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        changed.update(range(j1 + 1, j2 + 1))
        reverted = "".join(new[:j1] + old[i1:i2] + new[j2:])
        if rel.endswith(".py") and _same_code(reverted, after):
            continue  # a docstring or comment hunk: reverting it changes no behaviour
        line = min(j1 + 1, max(1, len(new)))
        span = f"line {j1 + 1}" if j2 - j1 <= 1 else f"lines {j1 + 1}-{j2}"
        what = {"insert": "added", "delete": "removed", "replace": "changed"}[tag]
        if tag == "delete":
            span = f"after line {j1}" if j1 else "at the top"
        out.append(
            Mutant(
                _stable_id(rel, "revert-hunk", "".join(old[i1:i2]), "".join(new[j1:j2])),
                "revert-hunk",
                rel,
                line,
                f"the hunk the solution {what} at {span} reverted",
                reverted.encode(),
            )
        )
    return out, changed


@functools.lru_cache(maxsize=64)
def _code_dump(text: str) -> str | None:
    """The syntax tree without string statements (docstrings), or None if it does not parse.
    Memoised: every hunk of a file is compared with the same solution text."""
    try:
        tree = pyast.parse(text)
    except (SyntaxError, ValueError):
        return None
    normalise_quiet(tree)  # a message or __all__ edited alone is no change either
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list):
            kept = [
                s for s in body
                if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))
            ]  # fmt: skip
            node.body = kept or [ast.Pass()]  # type: ignore[attr-defined]
    return ast.dump(tree)


def _same_code(a: str, b: str) -> bool:
    dump = _code_dump(a)
    return dump is not None and dump == _code_dump(b)


# --- operator mutants -------------------------------------------------------------------


def operator_mutants(
    rel: str, text: str, changed: set[int], modules: dict[str, ModuleFacts] | None = None,
    contract: str = "",
) -> list[Mutant]:
    """Operator, constant and statement mutants of the nodes that start on ``changed`` lines;
    ``modules`` are the task tree's modules, whose constants are the siblings offered and
    whose signatures say what an argument defaults to; ``contract`` the task's prompt and
    tests (a raised exception's message found there is mutated)."""
    try:
        tree = pyast.parse(text)
    except (SyntaxError, ValueError):
        return []
    siblings = SiblingFinder(rel, tree, modules or {})
    facts = modules or {}
    src = Source(text)
    statements = Statements(tree, src)
    parents: dict[int, ast.AST] = {}
    steps: dict[int, tuple[str, int | None]] = {}
    for parent in ast.walk(tree):
        for field, value in ast.iter_fields(parent):
            if isinstance(value, ast.AST):
                parents[id(value)], steps[id(value)] = parent, (field, None)
            elif isinstance(value, list):
                for i, item in enumerate(value):
                    if isinstance(item, ast.AST):
                        parents[id(item)], steps[id(item)] = parent, (field, i)
    untouched, messages = quiet(tree)
    skip = docstrings(tree) | untouched | messages | raise_arguments(tree, contract)
    callees = Callees(
        local=dict(siblings.local.functions),
        modules={name: dict(f.functions) for name, f in facts.items()},
        imported=siblings.imported, parents=parents, shadowed=bound_names(tree),
    )  # fmt: skip
    out: list[Mutant] = []
    occurrences: dict[str, int] = {}
    original: list[str] = []  # the whole module's dump, made only if ever needed
    for node in ast.walk(tree):
        line = getattr(node, "lineno", None)
        if line is None or line not in changed or id(node) in skip:
            continue
        node_dump = ast.dump(node)
        path = node_path(node, parents, steps)
        for kind, description, edits in itertools.chain(
            node_mutations(node, src, parents, skip, siblings, callees),
            more_mutations(node, src, parents, callees),
        ):
            content = src.apply(edits)
            keep = mutated_statement(statements, path, edits, content, node_dump)
            if keep is None:  # the whole module, then
                try:
                    mutated = pyast.parse(content)
                except (SyntaxError, ValueError):
                    continue
                keep = not unchanged_tree(mutated, path, node_dump, tree, original)
            if not keep:
                continue
            key = "\0".join((rel, kind, description, node_dump))
            occurrences[key] = occurrences.get(key, 0) + 1
            mid = _stable_id(key, str(occurrences[key]))
            out.append(Mutant(mid, kind, rel, line, description, content))
    return out
