"""The code under test as lint sees it for ES508: which names are, for sure, its objects.

The package (fixture, with the solution over it) and the task's child helpers are read with
:mod:`ast` into a :class:`PackageModel`. A name, a call or an attribute is a :class:`Ref` only
when it is sure to be an object of the package in the judge: its modules, classes and
functions, an instance made by calling one of its classes, what a function or method returns
when its annotation names one of the package's classes (or an iterator), or when it is a
generator. Everything else is unknown (:mod:`endstate_author.rules.judge_operands` never
reports it).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from endstate_author.engine.astwalk import child_nodes
from endstate_harness.graders import pyast

_ITERATOR_TYPES = frozenset({"Iterator", "Generator", "AsyncIterator", "AsyncGenerator"})
_ENUM_BASES = frozenset({"Enum", "IntEnum", "StrEnum", "Flag", "IntFlag"})
_HOPS = 8
"""Most re-exports followed (``from pkg.core import chunk`` in ``pkg/__init__.py`` is one)."""


@dataclass(frozen=True)
class Ref:
    """An expression sure to be an object of the code under test in the judge."""

    kind: str  # "module", "class", "function", "instance"
    target: str  # dotted name: the module, the class (also for an instance), the function
    method_of: str = ""  # for a function defined in a class: that class

    def describe(self) -> str:
        if self.kind == "instance":
            return f"an instance of {self.target}"
        return f"{self.kind} {self.target}"


@dataclass(frozen=True)
class _Imported:
    """A name a module imports: ``origin`` (dotted, leading dots when relative) and, for
    ``from origin import name``, the name."""

    origin: str
    name: str = ""


@dataclass
class _Module:
    tree: ast.Module
    names: dict[str, ast.AST | _Imported]  # top-level defs, classes, assignments, imports
    is_package: bool


class PackageModel:
    """The code under test as the judge would see it, read statically."""

    def __init__(self, sources: dict[str, tuple[ast.Module, bool]],
                 yield_free: frozenset[str] = frozenset()) -> None:
        """``sources``: dotted module name → (parsed module, whether it is a package);
        ``yield_free``: the modules whose source text has no ``yield`` at all, so none of
        their functions is a generator (a yield is written with that keyword, letter for
        letter), which spares walking each function a test calls."""
        self.modules = {name: _Module(tree, _top_names(tree), pkg)
                        for name, (tree, pkg) in sources.items()}
        self.yield_free = yield_free
        self.tops = {name.split(".")[0] for name in sources}
        self._generators: dict[int, bool] = {}
        """Whether each function (by the id of its node, which the model keeps) yields:
        asked once per call of it that a test makes, answered once."""

    # --- names ---------------------------------------------------------------------------

    def resolve(self, dotted: str, hops: int = 0) -> Ref | None:
        """What ``dotted`` (``pkg.calc.add``) names in the package, if it is sure."""
        if dotted in self.modules:
            return Ref("module", dotted)
        module, _, name = dotted.rpartition(".")
        if not module or hops > _HOPS:
            return None
        return self.member(Ref("module", module), name, hops + 1) if module in self.modules \
            else None

    def member(self, owner: Ref, name: str, hops: int = 0) -> Ref | None:
        """``owner.name`` when it is sure to be a reference."""
        if owner.kind == "module":
            sub = f"{owner.target}.{name}"
            if sub in self.modules:
                return Ref("module", sub)
            module = self.modules.get(owner.target)
            node = module.names.get(name) if module else None
            return self._bound(owner.target, node, name, hops) if node is not None else None
        cls = self._class(owner.target)
        if cls is None:
            return None
        found = self._class_member(owner.target, cls, name)
        if found is None:
            return None
        data = isinstance(found, ast.Assign | ast.AnnAssign)
        if owner.kind == "class" and data and _is_enum(cls):
            return Ref("instance", owner.target)
        if isinstance(found, ast.FunctionDef | ast.AsyncFunctionDef):
            if owner.kind == "instance" and _is_property(found):
                return self.returns(Ref("function", f"{owner.target}.{name}", owner.target), found)
            return Ref("function", f"{owner.target}.{name}", owner.target)
        if isinstance(found, ast.AnnAssign) and owner.kind == "instance":
            return self._annotation(found.annotation, _module_of(owner.target, self), owner.target)
        return None

    def call(self, callee: Ref) -> Ref | None:
        """What calling ``callee`` returns, when it is sure to be a reference."""
        if callee.kind == "class":
            return Ref("instance", callee.target)
        if callee.kind != "function":
            return None
        node = self._function(callee)
        return self.returns(callee, node) if node is not None else None

    def returns(self, callee: Ref, node: ast.FunctionDef | ast.AsyncFunctionDef) -> Ref | None:
        module = _module_of(callee.method_of or callee.target, self)
        generator = self._generators.get(id(node))
        if generator is None:
            generator = self._generators[id(node)] = (
                module not in self.yield_free and _is_generator(node))
        if generator:
            return Ref("instance", "generator")
        if node.returns is None:
            return None
        return self._annotation(node.returns, module, callee.method_of)

    # --- inside ---------------------------------------------------------------------------

    def _bound(self, module: str, node: ast.AST | _Imported, name: str, hops: int) -> Ref | None:
        if isinstance(node, ast.ClassDef):
            return Ref("class", f"{module}.{name}")
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            return Ref("function", f"{module}.{name}")
        if isinstance(node, _Imported):
            return self._imported(module, node, hops)
        if isinstance(node, ast.AnnAssign):
            return self._annotation(node.annotation, module, "")
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            callee = self.expression_in(module, node.value.func, hops)
            return self.call(callee) if callee is not None and callee.kind == "class" else None
        return None

    def _imported(self, module: str, imported: _Imported, hops: int) -> Ref | None:
        origin = imported.origin
        if origin.startswith("."):  # relative: resolved against this module's package
            base = self._package_of(module).split(".")
            dots = len(origin) - len(origin.lstrip("."))
            parent = base[: len(base) - (dots - 1)] if dots > 1 else base
            rest = origin.lstrip(".")
            origin = ".".join(parent + ([rest] if rest else []))
        if imported.name:
            return self.resolve(f"{origin}.{imported.name}", hops + 1)
        return self.resolve(origin, hops + 1)

    def _package_of(self, module: str) -> str:
        entry = self.modules.get(module)
        return module if entry is not None and entry.is_package else module.rpartition(".")[0]

    def expression_in(self, module: str, node: ast.AST, hops: int = 0) -> Ref | None:
        """A name or attribute chain of ``module``'s own code, resolved."""
        if isinstance(node, ast.Name):
            entry = self.modules.get(module)
            bound = entry.names.get(node.id) if entry else None
            return self._bound(module, bound, node.id, hops + 1) if bound is not None else None
        if isinstance(node, ast.Attribute):
            owner = self.expression_in(module, node.value, hops)
            return self.member(owner, node.attr, hops + 1) if owner is not None else None
        return None

    def _annotation(self, node: ast.AST, module: str, own_class: str) -> Ref | None:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            try:
                node = pyast.expression(node.value).body
            except SyntaxError:
                return None
        if isinstance(node, ast.Subscript):
            head = node.value
            name = head.attr if isinstance(head, ast.Attribute) else getattr(head, "id", "")
            return Ref("instance", "iterator") if name in _ITERATOR_TYPES else None
        name = node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", "")
        if name in _ITERATOR_TYPES:
            return Ref("instance", "iterator")
        if name == "Self" and own_class:
            return Ref("instance", own_class)
        found = self.expression_in(module, node)
        if found is None and own_class and name == own_class.rpartition(".")[2]:
            found = Ref("class", own_class)
        return Ref("instance", found.target) if found is not None and found.kind == "class" \
            else None

    def _class(self, dotted: str) -> ast.ClassDef | None:
        module, _, name = dotted.rpartition(".")
        entry = self.modules.get(module)
        node = entry.names.get(name) if entry else None
        return node if isinstance(node, ast.ClassDef) else None

    def _class_member(
        self, dotted: str, cls: ast.ClassDef, name: str, depth: int = 0
    ) -> ast.AST | None:
        for stmt in cls.body:
            if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef) and stmt.name == name:
                return stmt
            if isinstance(stmt, ast.AnnAssign) and getattr(stmt.target, "id", "") == name:
                return stmt
            if isinstance(stmt, ast.Assign) and any(getattr(t, "id", "") == name
                                                    for t in stmt.targets):
                return stmt
        if depth > _HOPS:
            return None
        module = dotted.rpartition(".")[0]
        for base in cls.bases:
            ref = self.expression_in(module, base)
            parent = self._class(ref.target) if ref is not None and ref.kind == "class" else None
            if ref is not None and parent is not None:
                found = self._class_member(ref.target, parent, name, depth + 1)
                if found is not None:
                    return found
        return None

    def _function(self, ref: Ref) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
        owner, _, name = ref.target.rpartition(".")
        node: ast.AST | _Imported | None
        if ref.method_of:
            cls = self._class(ref.method_of)
            node = self._class_member(ref.method_of, cls, name) if cls is not None else None
        else:
            entry = self.modules.get(owner)
            node = entry.names.get(name) if entry else None
        return node if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) else None


def _module_of(dotted: str, model: PackageModel) -> str:
    while dotted and dotted not in model.modules:
        dotted = dotted.rpartition(".")[0]
    return dotted


def _top_names(tree: ast.Module) -> dict[str, ast.AST | _Imported]:
    """What each top-level name of a module is bound to (the last binding wins)."""
    names: dict[str, ast.AST | _Imported] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names[stmt.name] = stmt
        elif isinstance(stmt, ast.Import):
            for alias in stmt.names:
                bound = alias.asname or alias.name.split(".")[0]
                names[bound] = _Imported(alias.name if alias.asname else bound)
        elif isinstance(stmt, ast.ImportFrom):
            origin = "." * stmt.level + (stmt.module or "")
            for alias in stmt.names:
                names[alias.asname or alias.name] = _Imported(origin, alias.name)
        elif isinstance(stmt, ast.Assign):
            for target in stmt.targets:
                if isinstance(target, ast.Name):
                    names[target.id] = stmt
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            names[stmt.target.id] = stmt
    return names


def _is_enum(cls: ast.ClassDef) -> bool:
    return any((b.attr if isinstance(b, ast.Attribute) else getattr(b, "id", "")) in _ENUM_BASES
               for b in cls.bases)


def _is_property(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any(getattr(d, "id", "") in ("property", "cached_property")
               or getattr(d, "attr", "") == "cached_property" for d in node.decorator_list)


def _is_generator(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether ``node`` yields (in its own body, not in a nested function or class)."""
    stack: list[ast.AST] = list(node.body)
    while stack:
        item = stack.pop()
        if isinstance(item, ast.Yield | ast.YieldFrom):
            return True
        if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            continue
        stack.extend(child_nodes(item))
    return False
