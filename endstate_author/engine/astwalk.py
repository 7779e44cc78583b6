"""Walking a Python syntax tree without generators: the same orders as :mod:`ast`, faster.

Lint reads every test and module of every task with :mod:`ast`; on a thousand-task suite the
generator chains of :func:`ast.walk` and :class:`ast.NodeVisitor` cost more than the parse.
These lists give the same nodes in the same orders (tests compare them with :mod:`ast`'s),
less the expression contexts.

Why the contexts are left out: ``ctx`` (``Load``, ``Store``, ``Del``) is a field of every
name, attribute, subscript, list, tuple and starred expression, and the parser hands out one
shared instance of each; ast.walk lists that instance once per expression, which is about
three nodes in ten of a test file, and no rule ever asks for one (they read ``node.ctx``).
Leaving them out, and reading only the fields that can hold a node (never ``id``, ``attr``,
``name``…, which are strings), halves the walk.
"""

from __future__ import annotations

import ast
from typing import Any

EXPR_CONTEXTS = (ast.Load, ast.Store, ast.Del)
"""The nodes these walks leave out (see the module's docstring)."""

_NEVER_NODES = frozenset({
    "ctx", "id", "attr", "arg", "module", "level", "asname", "kind", "type_comment",
    "conversion", "is_async", "rest", "tag", "kwd_attrs",
})  # fmt: skip
"""Fields that hold an identifier, a number or a flag in every node class that has them (and
``ctx``, left out on purpose). ``name`` and ``value`` are such fields only in some classes:
see :func:`_node_fields`."""

_NAME_IS_A_NODE = frozenset({"TypeAlias"})
"""Classes whose ``name`` is an expression (Python 3.12's ``type X = …``), not a string."""

_FIELDS: dict[type, tuple[str, ...]] = {}


def _node_fields(cls: type) -> tuple[str, ...]:
    """The fields of ``cls`` that may hold a node or a list of nodes, in field order, worked
    out at a class's first node and kept in ``_FIELDS`` (which the walks look in first)."""
    fields = _FIELDS[cls] = tuple(
        name for name in getattr(cls, "_fields", ())
        if name not in _NEVER_NODES
        and not (name == "name" and cls.__name__ not in _NAME_IS_A_NODE)
        and not (name == "value" and cls is ast.Constant)
    )  # fmt: skip
    return fields


def child_nodes(node: ast.AST) -> list[ast.AST]:
    """The children of ``node`` in :func:`ast.iter_child_nodes`'s order, less the expression
    contexts, as a list (about twice as fast as the generator, which matters on a thousand
    tasks' worth of tests)."""
    out: list[ast.AST] = []
    cls = type(node)
    fields = _FIELDS.get(cls)
    for field in fields if fields is not None else _node_fields(cls):
        value = getattr(node, field, None)
        if value is None:
            continue
        if type(value) is list:
            out.extend(item for item in value if isinstance(item, ast.AST))
        elif isinstance(value, ast.AST):
            out.append(value)
    return out


def walk(module: ast.AST) -> list[ast.AST]:
    """:func:`ast.walk` as a list, less the expression contexts: breadth first, children in
    field order."""
    return walk_spans(module)[0]


def walk_spans(module: ast.AST) -> tuple[list[ast.AST], list[int]]:
    """:func:`walk`'s list, and where each node's children start in it: the children of
    ``nodes[i]`` are ``nodes[starts[i]:starts[i + 1]]`` (breadth first lists them together)."""
    out = [module]
    starts: list[int] = []
    append, mark = out.append, starts.append
    fields_of, known = _node_fields, _FIELDS.get
    is_node, node_type = isinstance, ast.AST
    i = 0
    while i < len(out):
        node = out[i]
        i += 1
        mark(len(out))
        # child_nodes' loop, written out here: a call per node makes the walk ~40% slower
        cls = type(node)
        fields = known(cls)
        for field in fields if fields is not None else fields_of(cls):
            value = getattr(node, field, None)
            if value is None:
                continue
            if type(value) is list:
                for item in value:
                    if is_node(item, node_type):
                        append(item)
            elif is_node(value, node_type):
                append(value)
    mark(len(out))
    return out, starts


def preorder(nodes: list[ast.AST], starts: list[int]) -> list[ast.AST]:
    """The nodes of :func:`walk_spans` depth first, a parent before its children: the order
    in which :class:`ast.NodeVisitor` visits them."""
    out: list[ast.AST] = []
    stack = [0]
    while stack:
        i = stack.pop()
        out.append(nodes[i])
        stack.extend(range(starts[i + 1] - 1, starts[i] - 1, -1))
    return out


class NodeIndex:
    """One parsed file's nodes, walked once for every rule that reads the file.

    Why: lint runs a dozen rules over each test and module, and each used to pass over the
    whole file for the few kinds of node it reads (imports, calls, definitions), so a file
    cost several walks beside its parse. The index walks it once (:func:`walk_spans`), groups
    the nodes by class on first demand, and keeps the depth-first order once a rule asks for
    it; the rules read those lists instead of walking. The nodes are shared: no rule may
    modify them."""

    __slots__ = ("_groups", "_preorder", "nodes", "starts")

    def __init__(self, nodes: list[ast.AST], starts: list[int]) -> None:
        """``nodes`` and ``starts``: the file's :func:`walk_spans` (``[], [0]`` for none)."""
        self.nodes, self.starts = nodes, starts
        self._groups: dict[object, list[Any]] | None = None
        self._preorder: list[ast.AST] | None = None

    def of(self, *kinds: type[ast.AST]) -> list[Any]:
        """The nodes whose class is one of ``kinds``, in :attr:`nodes`' (breadth-first)
        order. Exact classes: the concrete node classes of :mod:`ast` have no subclasses,
        so this is what ``isinstance`` would keep (never pass an abstract one, ``ast.expr``)."""
        groups = self._groups
        if groups is None:
            groups = self._groups = {}
            for node in self.nodes:
                group = groups.get(type(node))
                if group is None:
                    groups[type(node)] = [node]
                else:
                    group.append(node)
        key: object = kinds[0] if len(kinds) == 1 else kinds
        found = groups.get(key)
        if found is None:
            if len(kinds) == 1:
                return []
            wanted = frozenset(kinds)
            found = groups[key] = [node for node in self.nodes if type(node) in wanted]
        return found

    @property
    def preorder(self) -> list[ast.AST]:
        """The nodes depth first (:func:`preorder`), made once."""
        if self._preorder is None:
            self._preorder = preorder(self.nodes, self.starts) if self.nodes else []
        return self._preorder
