"""What a rule sees: one task folder, parsed once, with everything cached."""

from __future__ import annotations

import ast
import json
import os
import stat
from collections.abc import Iterator
from functools import cached_property
from pathlib import Path
from typing import Any

from endstate_author.engine.astwalk import NodeIndex, walk_spans
from endstate_author.engine.catalogue import Catalogue, GraderInfo
from endstate_author.engine.config import Config
from endstate_author.engine.declare import default_severity
from endstate_author.engine.diagnostics import Diagnostic, Fix, Severity
from endstate_author.engine.discovery.grader_names import builtin_name
from endstate_author.engine.jsonpos import JNode, JPair, JsonDocument, LineIndex, parse
from endstate_author.engine.trees import TreeEntry, walk_tree
from endstate_harness.graders import pyast
from endstate_harness.layout import (
    DEFECTS_DIR,
    FIXTURE_DIR,
    HOLDOUT_DIR,
    ORACLE_FILE,
    PROMPT_FILE,
    SOLUTION_DIR,
    TASK_FILE,
)
from endstate_harness.plain_manifest import plainly_valid

MAX_MANIFEST_BYTES = 1 << 20
"""A task.json over 1 MiB is not read (ES001 says why)."""

JsonPath = tuple[str | int, ...]


class TaskContext:
    """One task folder as the rules see it."""

    def __init__(
        self,
        root: Path,
        *,
        suite_root: Path | None = None,
        config: Config | None = None,
        text: bytes | None = None,
        catalogue: Catalogue | None = None,
        trees: dict[str, dict[str, TreeEntry]] | None = None,
    ) -> None:
        """``trees``, when given, is the cache of directory listings (tree name → entries) to
        read and fill instead of a fresh one: a caller that lints one task many times (the
        language server, once per keystroke) shares it until files change on disk."""
        self.root = root
        self.manifest_path = root / TASK_FILE
        self.suite_root = suite_root or root.parent
        self._config = config
        self._text = text
        self._catalogue = catalogue
        self.read_error: str | None = None
        if trees is not None:
            self._trees = trees  # takes the place of the empty cache ``_trees`` would make

    # ----- the manifest ---------------------------------------------------------------

    @cached_property
    def raw(self) -> bytes | None:
        if self._text is not None:
            if len(self._text) > MAX_MANIFEST_BYTES:  # a buffer is held to what a file is
                self.read_error = (
                    f"task.json is {len(self._text) / 1048576:.1f} MiB; a manifest over 1 MiB is "
                    "not read"
                )
                return None
            return self._text
        path = self.manifest_path
        try:
            if path.is_symlink():
                target = os.path.realpath(path)
                if not _inside(target, os.path.realpath(self.root)):
                    self.read_error = (
                        f"task.json is a symlink to {os.readlink(path)}, outside the task folder; "
                        "it is not followed"
                    )
                    return None
            info = os.stat(path)
            if stat.S_ISDIR(info.st_mode):
                self.read_error = "task.json is a directory, not a file"
                return None
            if not stat.S_ISREG(info.st_mode):
                self.read_error = "task.json is not a regular file (a pipe, socket or device)"
                return None
            if info.st_size > MAX_MANIFEST_BYTES:
                self.read_error = (
                    f"task.json is {info.st_size / 1048576:.1f} MiB; a manifest over 1 MiB is "
                    "not read"
                )
                return None
            with open(path, "rb") as handle:
                return handle.read(MAX_MANIFEST_BYTES + 1)
        except OSError as exc:
            self.read_error = f"task.json cannot be read: {exc.strerror or exc}"
            return None

    @cached_property
    def doc(self) -> JsonDocument | None:
        raw = self.raw
        return parse(raw) if raw is not None else None

    @cached_property
    def index(self) -> LineIndex:
        return self.doc.index if self.doc is not None else LineIndex(b"")

    @property
    def valid_json(self) -> bool:
        return self.doc is not None and self.doc.error is None and self.doc.root is not None

    @cached_property
    def data(self) -> dict[str, Any]:
        """The manifest as Python, {} unless it is a valid JSON object."""
        if self.valid_json and self.doc is not None and self.doc.root is not None:
            value = self.doc.root.to_python()
            if isinstance(value, dict):
                return value
        return {}

    @property
    def is_object(self) -> bool:
        return (
            self.valid_json
            and self.doc is not None
            and self.doc.root is not None
            and self.doc.root.kind == "object"
        )

    @cached_property
    def model_errors(self) -> list[dict[str, Any]]:
        """pydantic's errors for the manifest (loc, type, msg, input), [] when it validates."""
        if not self.is_object or plainly_valid(self.data):
            return []
        # deferred: the pydantic model (~0.1 s to import) only for a manifest that may be
        # invalid; its errors are what lint reports
        from pydantic import ValidationError  # deferred, as the model below

        from endstate_harness.task import TaskManifest  # deferred, as above

        try:
            TaskManifest.model_validate(self.data)
        except ValidationError as exc:
            return [dict(e) for e in exc.errors(include_url=False)]
        return []

    @property
    def category(self) -> str:
        value = self.data.get("category", "bug-fix")
        return value if isinstance(value, str) else ""

    @cached_property
    def quick_data(self) -> dict[str, Any] | None:
        """The manifest read with the C JSON parser alone (no positions), None unless it is
        an object: suite-wide rules need every task's id, and only a finding needs a range."""
        raw = self.raw
        try:
            value = json.loads(raw) if raw is not None else None
        except (ValueError, RecursionError):
            return None
        return value if isinstance(value, dict) else None

    @property
    def quick_id(self) -> str:
        task_id = (self.quick_data or {}).get("id")
        return task_id if isinstance(task_id, str) else self.root.name

    @property
    def task_id(self) -> str:
        value = self.data.get("id")
        return value if isinstance(value, str) else self.root.name

    def node(self, path: JsonPath) -> JNode | None:
        return self.doc.node_at_path(path) if self.doc is not None else None

    def pair(self, path: JsonPath) -> JPair | None:
        return self.doc.pair_at_path(path) if self.doc is not None else None

    def grader_entries(self) -> Iterator[tuple[int, str, dict[str, Any], JNode]]:
        """(index, name, args, node) for each well-shaped entry of ``graders``."""
        return iter(self._grader_entries)

    def library_graders(self, short: str) -> list[tuple[int, str, dict[str, Any], JNode]]:
        """The entries of :meth:`grader_entries` naming the library grader ``short``
        (``command_succeeds``), from an index built once: a dozen rules ask, and a manifest
        may list thousands of graders."""
        return self._library_index.get(short, [])

    @cached_property
    def _library_index(self) -> dict[str, list[tuple[int, str, dict[str, Any], JNode]]]:
        index: dict[str, list[tuple[int, str, dict[str, Any], JNode]]] = {}
        for entry in self._grader_entries:
            short = builtin_name(entry[1])
            if short is not None:
                index.setdefault(short, []).append(entry)
        return index

    @cached_property
    def _grader_entries(self) -> list[tuple[int, str, dict[str, Any], JNode]]:
        graders = self.data.get("graders")
        node = self.node(("graders",))
        if not isinstance(graders, list) or node is None:
            return []
        out = []
        for i, entry in enumerate(graders):
            if not isinstance(entry, dict) or i >= len(node.items):
                continue
            name = entry.get("name")
            args = entry.get("args", {})
            if isinstance(name, str) and isinstance(args, dict):
                out.append((i, name, args, node.items[i]))
        return out

    # ----- files around the manifest -----------------------------------------------------

    def tree(self, name: str) -> dict[str, TreeEntry]:
        if name not in self._trees:
            self._trees[name] = walk_tree(self.root / name)
        return self._trees[name]

    @cached_property
    def _trees(self) -> dict[str, dict[str, TreeEntry]]:
        return {}

    @property
    def fixture(self) -> dict[str, TreeEntry]:
        return self.tree(FIXTURE_DIR)

    @property
    def holdout(self) -> dict[str, TreeEntry]:
        return self.tree(HOLDOUT_DIR)

    @property
    def solution(self) -> dict[str, TreeEntry]:
        return self.tree(SOLUTION_DIR)

    def files(self, name: str) -> dict[str, TreeEntry]:
        """Regular files (and symlinks) of a tree, without directories or special files
        (ES414 reports those). Made once per tree (the rules ask ~40 times a task), so the
        rules must not modify it: it is shared, like the tree it is read from."""
        tree = self.tree(name)
        made = self._files.get(name)
        if made is None or made[0] is not tree:  # a caller may hand in fresh listings
            made = self._files[name] = (
                tree, {rel: e for rel, e in tree.items() if not (e.is_dir or e.special)})
        return made[1]

    @cached_property
    def _files(self) -> dict[str, tuple[dict[str, TreeEntry], dict[str, TreeEntry]]]:
        return {}

    def has_dir(self, name: str) -> bool:
        path = self.root / name
        return path.is_dir() and not path.is_symlink()

    @cached_property
    def defects(self) -> list[str]:
        folder = self.root / DEFECTS_DIR
        if not folder.is_dir() or folder.is_symlink():
            return []
        try:
            return sorted(p.name for p in folder.iterdir() if p.is_dir() and not p.is_symlink())
        except OSError:
            return []

    @cached_property
    def prompt_md(self) -> str | None:
        """prompt.md's text, or None when there is none (undecodable bytes are replaced)."""
        path = self.root / PROMPT_FILE
        try:
            if path.is_file():
                return path.read_bytes()[:MAX_MANIFEST_BYTES].decode("utf-8", errors="replace")
        except OSError:
            return None
        return None

    @property
    def oracle_path(self) -> Path:
        return self.root / ORACLE_FILE

    def read_tree_text(self, name: str, rel: str) -> str | None:
        """Text of ``<tree>/<rel>``; None if missing, a link, binary or over 1 MiB."""
        key = (name, rel)
        if key not in self._texts:
            self._texts[key] = self._read_text(name, rel)
        return self._texts[key]

    @cached_property
    def _texts(self) -> dict[tuple[str, str], str | None]:
        return {}

    def _read_text(self, name: str, rel: str) -> str | None:
        entry = self.files(name).get(rel)
        if entry is None or entry.is_symlink or entry.size > MAX_MANIFEST_BYTES:
            return None
        data = self.read_tree_bytes(name, rel)  # one read for the text and the comparisons
        if data is None or b"\x00" in data:
            return None
        return data.decode("utf-8", errors="replace")

    def read_tree_bytes(self, name: str, rel: str) -> bytes | None:
        """The bytes of ``<tree>/<rel>`` for comparing files: ``b"link:" + target`` for a
        symlink (never followed), None when it cannot be read. Read once for every rule that
        compares it (solution against fixture, holdout against fixture), unless it is over
        1 MiB: a large file is read again by each comparison rather than kept."""
        key = (name, rel)
        if key in self._bytes:
            return self._bytes[key]
        entry = self.tree(name).get(rel)
        data: bytes | None = None
        try:
            if entry is None:
                pass  # not in the tree's listing: nothing to compare
            elif entry.is_symlink:
                data = b"link:" + os.readlink(entry.abspath).encode()
            else:
                with open(entry.abspath, "rb") as handle:
                    data = handle.read()
        except OSError:
            data = None
        if data is None or len(data) <= MAX_MANIFEST_BYTES:
            self._bytes[key] = data
        return data

    @cached_property
    def _bytes(self) -> dict[tuple[str, str], bytes | None]:
        return {}

    @cached_property
    def solution_changes(self) -> tuple[str, ...]:
        """Solution files that differ from the fixture file they overlay, or are new (sorted)."""
        fixture = self.files(FIXTURE_DIR)
        return tuple(sorted(
            rel for rel in self.files(SOLUTION_DIR)
            if rel not in fixture
            or self.read_tree_bytes(SOLUTION_DIR, rel) != self.read_tree_bytes(FIXTURE_DIR, rel)
        ))  # fmt: skip

    # ----- Python source, parsed once per task ----------------------------------------------

    def python_module(self, name: str, rel: str) -> ast.Module | None:
        """``<tree>/<rel>`` parsed by :func:`ast.parse`, once for every rule that asks; None
        when :meth:`read_tree_text` has no text or the text is not valid Python (a
        SyntaxError or ValueError). Any other error of the parser propagates, every time, as
        it did before the parse was shared (a rule that meets it crashes into ES000)."""
        key = (name, rel)
        if key not in self._modules:
            text = self.read_tree_text(name, rel)
            module = None
            if text is not None:
                try:
                    module = pyast.parse(text)
                except (SyntaxError, ValueError):
                    module = None
            self._modules[key] = module
        return self._modules[key]

    def python_nodes(self, name: str, rel: str) -> list[ast.AST]:
        """Every node of :meth:`python_module` in :func:`ast.walk`'s order (breadth first);
        [] without a module. The rules must not modify the nodes: they are shared."""
        return self.python_index(name, rel).nodes

    def python_walk(self, name: str, rel: str) -> tuple[list[ast.AST], list[int]]:
        """:meth:`python_nodes` with where each node's children start in it
        (:func:`endstate_author.engine.astwalk.walk_spans`)."""
        index = self.python_index(name, rel)
        return index.nodes, index.starts

    def python_index(self, name: str, rel: str) -> NodeIndex:
        """The file's one walk, its nodes by class and depth first (:class:`NodeIndex`), made
        at the first rule that asks and read by all the others instead of a walk of theirs."""
        key = (name, rel)
        found = self._indexes.get(key)
        if found is None:
            module = self.python_module(name, rel)
            spans = walk_spans(module) if module is not None else ([], [0])
            found = self._indexes[key] = NodeIndex(*spans)
        return found

    def python_imports(self, name: str, rel: str) -> list[ast.Import | ast.ImportFrom]:
        """The ``import`` and ``from … import`` statements of :meth:`python_nodes`, in its order
        (several rules read only these; listed once for all of them)."""
        return self.python_index(name, rel).of(ast.Import, ast.ImportFrom)

    @cached_property
    def _modules(self) -> dict[tuple[str, str], ast.Module | None]:
        return {}

    @cached_property
    def _indexes(self) -> dict[tuple[str, str], NodeIndex]:
        return {}

    # ----- configuration and graders -----------------------------------------------------

    @property
    def config(self) -> Config:
        if self._config is None:
            self._config = Config()
        return self._config

    @property
    def catalogue(self) -> Catalogue:
        if self._catalogue is None:
            self._catalogue = Catalogue.for_task(self.root, self.suite_root, self.config)
        return self._catalogue

    def resolve(self, name: str) -> GraderInfo | None:
        """Static look-up of a grader (never imports suite code); None when not found."""
        return self.catalogue.resolve(name)

    # ----- making findings ---------------------------------------------------------------

    def at_node(
        self,
        code: str,
        message: str,
        node: JNode | JPair | None,
        *,
        severity: Severity | None = None,
        fix: Fix | None = None,
    ) -> Diagnostic:
        """A finding on a JSON node (or on a whole member, key through value)."""
        if node is None:
            return self.at_file(code, message, self.manifest_path, severity=severity, fix=fix)
        start, end = node.start, node.end
        sl, sc = self.index.position(start)
        el, ec = self.index.position(end)
        return Diagnostic(
            code=code,
            severity=severity or default_severity(code),
            message=message,
            file=self.manifest_path,
            line=sl + 1,
            column=sc + 1,
            end_line=el + 1,
            end_column=ec + 1,
            start_offset=start,
            end_offset=end,
            fix=fix,
        )

    def at_key(self, code: str, message: str, path: JsonPath, **kw: Any) -> Diagnostic:
        """A finding on the key of the member at ``path`` (falls back to its value)."""
        pair = self.pair(path)
        return self.at_node(code, message, pair.key_node if pair else self.node(path), **kw)

    def at_value(self, code: str, message: str, path: JsonPath, **kw: Any) -> Diagnostic:
        """A finding on the value at ``path``; the nearest existing ancestor otherwise."""
        for cut in range(len(path), -1, -1):
            node = self.node(path[:cut])
            if node is not None:
                return self.at_node(code, message, node, **kw)
        return self.at_node(code, message, None, **kw)

    def at_file(
        self,
        code: str,
        message: str,
        file: Path,
        *,
        line: int = 1,
        column: int = 1,
        end_line: int | None = None,
        end_column: int | None = None,
        severity: Severity | None = None,
        fix: Fix | None = None,
    ) -> Diagnostic:
        """A finding about a file (a missing ``__init__.py``, a symlink, a grader module)."""
        return Diagnostic(
            code=code,
            severity=severity or default_severity(code),
            message=message,
            file=file,
            line=line,
            column=column,
            end_line=end_line if end_line is not None else line,
            end_column=end_column if end_column is not None else column,
            fix=fix,
        )


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)
