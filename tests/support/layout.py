"""The layout of the three packages, measured from the code's own imports: rooms, floors,
arrows and loops per package. ``tests/test_architecture.py`` holds the code to it; anyone can
print it::

    python -m tests.support.layout            # this checkout
    python -m tests.support.layout OTHER_DIR  # another checkout (e.g. an older commit's)

The words:

- a **room** is a direct part of a package: a sub-package (``prove/``) or a module
  (``taskhash.py``); the package's own ``__init__`` is its *face*;
- an **arrow** is a room importing another room (every import counts: module-level,
  function-local and type-only);
- **floors** stack the rooms so that every arrow points down when the rooms form no loop; an
  arrow that runs back up is one inside a loop of rooms;
- a **loop** is an import cycle among modules. Every import counts, and so does a package's
  face: ``from a import b`` reads ``b`` out of package ``a`` (executing ``a/__init__``), so it is
  an edge to ``a`` as well as to ``a.b``. A package ``__init__`` that re-exports a submodule
  which imports its siblings through the package is a loop, as a reader sees it; siblings
  import each other by module path (``from a.b import x``).
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE_DIRS = {
    "endstate_author": Path("endstate_author"),
    "endstate_lsp": Path("lsp") / "endstate_lsp",
    "endstate_harness": Path("harness") / "endstate_harness",
}


def packages_at(root: Path) -> dict[str, Path]:
    return {name: root / rel for name, rel in PACKAGE_DIRS.items()}


@dataclass(frozen=True)
class Module:
    name: str
    path: Path
    rel: str  # forward-slash path from the repository root
    is_package: bool
    source: str


@dataclass(frozen=True)
class Import:
    """One import statement's target, as an absolute dotted name (``names`` for ``from``)."""

    module: Module
    line: int
    target: str
    names: tuple[str, ...]
    local: bool  # inside a def or class body, at any depth
    type_checking: bool  # inside ``if TYPE_CHECKING:`` (never executed)


def read_modules(packages: dict[str, Path], root: Path = ROOT) -> dict[str, Module]:
    out: dict[str, Module] = {}
    for top, folder in packages.items():
        for path in sorted(folder.rglob("*.py")):
            if "__pycache__" in path.parts:
                continue
            parts = path.relative_to(folder).with_suffix("").parts
            is_package = parts[-1] == "__init__"
            dotted = ".".join((top, *(parts[:-1] if is_package else parts)))
            base = root if path.is_relative_to(root) else folder.parent
            rel = path.relative_to(base).as_posix()
            out[dotted] = Module(dotted, path, rel, is_package, path.read_text(encoding="utf-8"))
    return out


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports_of(module: Module) -> Iterator[Import]:
    """Every import statement of a module, with where it stands."""

    def visit(node: ast.AST, local: bool, type_checking: bool) -> Iterator[Import]:
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Import(module, node.lineno, alias.name, (), local, type_checking)
        elif isinstance(node, ast.ImportFrom):
            target = _absolute(module, node.module, node.level)
            names = tuple(a.name for a in node.names)
            yield Import(module, node.lineno, target, names, local, type_checking)
        elif isinstance(node, ast.If) and _is_type_checking(node.test):
            for stmt in node.body:
                yield from visit(stmt, local, True)
            for stmt in node.orelse:
                yield from visit(stmt, local, type_checking)
        else:
            inner = local or isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
            for child in ast.iter_child_nodes(node):
                yield from visit(child, inner, type_checking)

    yield from visit(ast.parse(module.source, filename=str(module.path)), False, False)


def _absolute(module: Module, name: str | None, level: int) -> str:
    if level == 0:
        return name or ""
    package = module.name.split(".") if module.is_package else module.name.split(".")[:-1]
    base = package[: len(package) - (level - 1)]
    return ".".join([*base, name] if name else base)


def targets(imp: Import, modules: Collection[str]) -> set[str]:
    """The project modules an import statement makes its module depend on: ``import a.b`` and
    ``from a.b import x`` depend on ``a.b``; ``from a import b`` on ``a.b`` when it is a
    module, and on ``a`` too, whose namespace the name is read from."""
    out: set[str] = set()
    candidates = [f"{imp.target}.{n}" for n in imp.names] if imp.names else []
    for dotted in candidates:
        if dotted in modules:
            out.add(dotted)
        out.add(_nearest(imp.target, modules))
    if not imp.names:
        out.add(_nearest(imp.target, modules))
    out.discard("")
    return out


def _nearest(dotted: str, modules: Collection[str]) -> str:
    parts = dotted.split(".")
    while parts:
        name = ".".join(parts)
        if name in modules:
            return name
        parts.pop()
    return ""


def import_graph(modules: dict[str, Module]) -> dict[str, set[str]]:
    """Every import counts, module-level, function-local and type-only alike: a loop that a
    deferred or a ``TYPE_CHECKING`` import hides is still a loop in the design."""
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for module in modules.values():
        for imp in imports_of(module):
            graph[module.name] |= targets(imp, modules) - {module.name}
    return graph


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle path (first node repeated at the end) per strongly connected component
    that has one; [] for an acyclic graph."""
    return [
        _cycle_in(graph, set(c), c[0])
        for c in _components(graph)
        if len(c) > 1 or c[0] in graph.get(c[0], ())
    ]


def _cycle_in(graph: dict[str, set[str]], component: set[str], start: str) -> list[str]:
    """A shortest path from ``start`` back to itself inside one component."""
    previous: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for child in sorted(graph.get(node, ())):
                if child not in component:
                    continue
                if child == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(previous[path[-1]])
                    return [start, *reversed(path[:-1]), start] if node != start else [start, start]
                if child not in previous:
                    previous[child] = node
                    following.append(child)
        frontier = following
    raise AssertionError(f"no cycle through {start}")


# ----- rooms and floors ---------------------------------------------------------------------


@dataclass(frozen=True)
class Layout:
    package: str
    rooms: dict[str, int]  # room -> floor (1 = the bottom)
    arrows: set[tuple[str, str]]
    back_up: set[tuple[str, str]]  # arrows inside a loop of rooms
    loops: list[list[str]]  # import cycles among the package's modules

    @property
    def floors(self) -> int:
        return max(self.rooms.values(), default=0)


def layout(package: str, modules: dict[str, Module]) -> Layout:
    mine = {
        name: m for name, m in modules.items() if name == package or name.startswith(package + ".")
    }
    graph = {name: {t for t in deps if t in mine} for name, deps in import_graph(mine).items()}
    folders = {name for name, m in mine.items() if m.is_package}
    room = {name: _room(name, package, folders) for name in mine}
    arrows = {(room[m], room[t]) for m, deps in graph.items() for t in deps if room[m] != room[t]}
    rooms_graph: dict[str, set[str]] = {r: set() for r in room.values()}
    for a, b in arrows:
        rooms_graph[a].add(b)
    components = _components(rooms_graph)
    member = {r: i for i, c in enumerate(components) for r in c}
    back_up = {(a, b) for a, b in arrows if member[a] == member[b]}
    floor: dict[str, int] = {}
    for comp in components:  # successors (lower rooms) come first in Tarjan's order
        below = [floor[b] for r in comp for b in rooms_graph[r] if member[b] != member[r]]
        level = 1 + max(below, default=0)
        for r in comp:
            floor[r] = level
    return Layout(package, floor, arrows, back_up, find_cycles(graph))


def _room(name: str, package: str, folders: set[str]) -> str:
    if name == package:
        return "__init__.py"
    first = name[len(package) + 1 :].split(".")[0]
    return f"{first}/" if f"{package}.{first}" in folders else f"{first}.py"


def _components(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components, each after every component it points to."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        work: list[tuple[str, Iterator[str]]] = [(start, iter(sorted(graph.get(start, ()))))]
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    m = stack.pop()
                    on_stack.discard(m)
                    comp.append(m)
                    if m == node:
                        break
                out.append(sorted(comp))
    return out


def report(root: Path = ROOT) -> str:
    modules = read_modules(packages_at(root), root)
    lines = []
    for package in PACKAGE_DIRS:
        shape = layout(package, modules)
        lines.append(
            f"{package}: {len(shape.rooms)} rooms, {shape.floors} floors, "
            f"{len(shape.arrows)} arrows, {len(shape.back_up)} back up, "
            f"{len(shape.loops)} loops"
        )
        for level in range(shape.floors, 0, -1):
            here = sorted(r for r, f in shape.rooms.items() if f == level)
            lines.append(f"  floor {level:2d}  {'  '.join(here)}")
        for a, b in sorted(shape.back_up):
            lines.append(f"  back up: {a} -> {b}")
        for loop in shape.loops:
            lines.append("  loop: " + " -> ".join(loop))
    return "\n".join(lines)


if __name__ == "__main__":
    print(report(Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else ROOT))
