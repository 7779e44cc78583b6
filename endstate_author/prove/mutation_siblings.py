"""Sibling constants: what a constant reference could wrongly have been (``ROUND_HALF_EVEN``
for ``ROUND_HALF_UP``, ``Mode.FAST`` for ``Mode.SLOW``): a name of the same module, class,
enum or import line, of the same sort of value, that the file can name as written.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from endstate_author.prove.mutation_edits import CONSTANT_NAME
from endstate_author.prove.mutation_equivalents import Functions, function_facts
from endstate_harness.graders import pyast

PER_SITE = 3
"""Sibling mutants at most per constant reference."""

Members = tuple[tuple[str, str], ...]
"""(name, the sort of its value: ``int=3`` for a literal, ``call frozenset``, "" unknown), in
definition order."""


@dataclass(frozen=True)
class ModuleFacts:
    """A module's constants, its classes' members, and its functions' signatures (what a
    call's argument defaults to: :mod:`~endstate_author.prove.mutation_equivalents`)."""

    constants: Members = ()
    classes: tuple[tuple[str, Members], ...] = ()
    functions: Functions = ()


def _kind(value: ast.AST | None) -> str:
    """What sort of value a constant holds, as far as its definition says: a literal's type,
    the callable that builds it (``frozenset``, ``re.compile``), or the display's kind."""
    if value is None:
        return ""
    if isinstance(value, ast.Constant):
        return f"{type(value.value).__name__}={value.value!r}"
    if isinstance(value, ast.UnaryOp) and isinstance(value.operand, ast.Constant):
        return f"{type(value.operand.value).__name__}={ast.unparse(value)}"
    if isinstance(value, ast.Call):
        return "call " + ast.unparse(value.func)
    return type(value).__name__


def _assigned(body: list[ast.stmt]) -> Iterator[tuple[str, ast.AST | None]]:
    for stmt in body:
        if isinstance(stmt, ast.Assign):
            for target in stmt.targets:
                if isinstance(target, ast.Name):
                    yield target.id, stmt.value
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            yield stmt.target.id, stmt.value


def facts_of(tree: ast.Module) -> ModuleFacts:
    constants = tuple((n, _kind(v)) for n, v in _assigned(tree.body) if CONSTANT_NAME.match(n))
    classes = []
    for stmt in tree.body:
        if not isinstance(stmt, ast.ClassDef):
            continue
        enum = any("Enum" in ast.unparse(b) or "Flag" in ast.unparse(b) for b in stmt.bases)
        members = tuple(
            (n, _kind(v)) for n, v in _assigned(stmt.body)
            if not n.startswith("_") and (enum or CONSTANT_NAME.match(n))
        )  # fmt: skip
        if members:
            classes.append((stmt.name, members))
    return ModuleFacts(constants, tuple(classes), function_facts(tree))


@functools.lru_cache(maxsize=1024)
def _facts_of_file(path: str, mtime_ns: int, size: int) -> ModuleFacts:
    try:
        return facts_of(pyast.parse(Path(path).read_bytes()))
    except (OSError, SyntaxError, ValueError):
        return ModuleFacts()


def module_name(rel: str) -> str:
    parts = rel.removesuffix(".py").split("/")
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def tree_facts(roots: list[Path]) -> tuple[tuple[str, ModuleFacts], ...]:
    """Every module of the trees (later roots win), hashable for the generator's memo."""
    found: dict[str, ModuleFacts] = {}
    for root in roots:
        if not root.is_dir():
            continue
        for path in sorted(root.rglob("*.py")):
            if path.is_symlink() or not path.is_file():
                continue
            stat = path.stat()
            facts = _facts_of_file(str(path), stat.st_mtime_ns, stat.st_size)
            if facts.constants or facts.classes or facts.functions:
                found[module_name(path.relative_to(root).as_posix())] = facts
    return tuple(sorted(found.items()))


@dataclass
class SiblingFinder:
    """The siblings of the constant references of one file."""

    rel: str
    tree: ast.Module
    modules: dict[str, ModuleFacts]
    imported: dict[str, tuple[str, str | None]] = field(default_factory=dict)
    """local name -> (module, attribute or None for ``import module``)"""
    local: ModuleFacts = field(default_factory=ModuleFacts)
    references: dict[str, list[str]] = field(default_factory=dict)
    """base text -> the constant attributes the file reads of it, in order"""

    def __post_init__(self) -> None:
        self.local = facts_of(self.tree)
        package = module_name(self.rel).split(".")
        if not self.rel.endswith("__init__.py"):
            package = package[:-1]
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        self.imported[alias.asname] = (alias.name, None)
                    else:
                        top = alias.name.split(".")[0]
                        self.imported[top] = (top, None)
            elif isinstance(node, ast.ImportFrom):
                base = package[: len(package) - (node.level - 1)] if node.level else []
                module = ".".join([*base, *([node.module] if node.module else [])])
                for alias in node.names:
                    self.imported[alias.asname or alias.name] = (module, alias.name)
            elif isinstance(node, ast.Attribute) and CONSTANT_NAME.match(node.attr):
                seen = self.references.setdefault(ast.unparse(node.value), [])
                if node.attr not in seen:
                    seen.append(node.attr)

    def __call__(self, node: ast.AST) -> list[str]:
        if isinstance(node, ast.Name) and CONSTANT_NAME.match(node.id):
            return self._of_name(node.id)
        if isinstance(node, ast.Attribute) and CONSTANT_NAME.match(node.attr):
            base = ast.unparse(node.value)
            return [f"{base}.{n}" for n in self._of_attribute(base, node.attr)]
        return []

    def _of_name(self, name: str) -> list[str]:
        here = dict(self.local.constants)
        if name in here:
            return _nearest(name, self.local.constants)
        source = self.imported.get(name)
        if source is None or source[1] is None:
            return []
        module = source[0]
        # names bound in this file from the same module, in its order when it is known
        bound = [(local, attr) for local, (m, attr) in self.imported.items()
                 if m == module and attr is not None and CONSTANT_NAME.match(local)]  # fmt: skip
        facts = self.modules.get(module)
        order = {n: i for i, (n, _) in enumerate(facts.constants)} if facts else {}
        kinds = dict(facts.constants) if facts else {}
        bound.sort(key=lambda pair: order.get(pair[1] or "", len(order)))
        members = tuple((local, kinds.get(attr or "", "")) for local, attr in bound)
        return _nearest(name, members)

    def _of_attribute(self, base: str, attr: str) -> list[str]:
        members: Members = ()
        classes = dict(self.local.classes)
        if base in classes:
            members = classes[base]
        elif base in self.imported:
            module, inner = self.imported[base]
            if inner is None:
                facts = self.modules.get(module)
                members = facts.constants if facts else ()
            else:
                whole = self.modules.get(f"{module}.{inner}")  # ``from pkg import config``
                owner = self.modules.get(module)
                if whole is not None:
                    members = whole.constants
                elif owner is not None:
                    members = dict(owner.classes).get(inner, ())
        known = {n for n, _ in members}
        extra = tuple((n, "") for n in self.references.get(base, []) if n not in known)
        return _nearest(attr, members + extra)


def _nearest(name: str, members: Members) -> list[str]:
    """Up to :data:`PER_SITE` siblings of ``name`` among ``members``, nearest first, each
    of the same sort as ``name`` where both definitions are known (a set of words for a set of
    words, never for a pattern)."""
    names = [n for n, _ in members]
    kinds = dict(members)
    if name not in names:
        return []
    at = names.index(name)
    kind = kinds.get(name, "")
    order = sorted(
        (i for i in range(len(names)) if i != at), key=lambda i: (abs(i - at), i)
    )
    out = []
    for i in order:
        other = names[i]
        theirs = kinds.get(other, "")
        if kind and theirs and theirs.split("=", 1)[0] != kind.split("=", 1)[0]:
            continue  # another sort of value
        if "=" in kind and theirs == kind:
            continue  # the same literal: swapping them changes nothing
        out.append(other)
        if len(out) == PER_SITE:
            break
    return out
