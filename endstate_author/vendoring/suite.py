"""What vendoring a suite changes, planned before anything is written."""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass, field
from pathlib import Path

from endstate_author.engine.catalogue.names import split_name
from endstate_author.engine.config import Config
from endstate_author.engine.context import TaskContext
from endstate_author.engine.diagnostics import display_path
from endstate_author.vendoring.render import (
    INIT_TEXT,
    VENDOR_FILE,
    VENDOR_INIT,
    VENDOR_MODULE,
    VENDORED_GRADERS,
    read_header,
    render_module,
)
from endstate_harness.graders import REFERENCE_GRADERS, REFERENCE_MODULE, THIS_MODULE
from endstate_harness.layout import find_task_dirs


class VendorError(ValueError):
    """The suite cannot be vendored as asked (no such folder, a link in the way)."""


@dataclass(frozen=True)
class Rename:
    manifest: Path
    index: int
    old: str
    new: str


@dataclass
class VendorPlan:
    """Everything ``vendor`` would write; nothing is written until :func:`write_plan`."""

    suite: Path
    tasks: int = 0
    module_path: Path = Path()
    module_old: str | None = None
    module_new: str = ""
    init_path: Path = Path()
    init_missing: bool = False
    needs_module: bool = False
    manifests: dict[Path, tuple[bytes, bytes]] = field(default_factory=dict)
    renames: list[Rename] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def module_changes(self) -> bool:
        return self.needs_module and self.module_old != self.module_new

    @property
    def empty(self) -> bool:
        return (
            not self.manifests
            and not self.module_changes
            and not (self.needs_module and self.init_missing)
        )


def new_name(name: str) -> str | None:
    """What a grader name becomes in a vendored suite; None when it stays."""
    parts = split_name(name)
    if parts is None or parts[0] != THIS_MODULE:
        return None
    function = parts[1]
    if function in VENDORED_GRADERS:
        return f"{VENDOR_MODULE}:{function}"
    if function in REFERENCE_GRADERS:
        return f"{REFERENCE_MODULE}:{function}"
    return None


def _is_vendored(name: str) -> bool:
    parts = split_name(name)
    return parts is not None and parts[0] == VENDOR_MODULE


def _refuse_links(suite: Path, rel: str) -> Path:
    """``suite/rel``, refusing a link or a non-folder anywhere on the way below ``suite``."""
    path = suite
    for part in rel.split("/"):
        path = path / part
        if path.is_symlink():
            raise VendorError(f"{path} is a symbolic link; vendor does not write through links")
    parent = path.parent
    if parent.exists() and not parent.is_dir():
        raise VendorError(f"{parent} is not a folder")
    if path.exists() and not path.is_file():
        raise VendorError(f"{path} is not a regular file")
    return path


def plan_vendor(suite: Path) -> VendorPlan:
    """The changes that make ``suite`` gradable by plain endstate 0.3.0.

    Raises:
        VendorError: ``suite`` is not a folder holding tasks, or a link is in the way.
    """
    if not suite.is_dir():
        raise VendorError(f"{suite}: not a folder (give the suite folder that holds the tasks)")
    task_dirs = find_task_dirs(suite)
    if not task_dirs:
        raise VendorError(f"{suite}: no task.json below it")
    plan = VendorPlan(suite=suite, tasks=len(task_dirs))
    plan.module_path = _refuse_links(suite, VENDOR_FILE)
    plan.init_path = _refuse_links(suite, VENDOR_INIT)
    for task in task_dirs:
        ctx = TaskContext(task, suite_root=suite, config=Config())
        raw = ctx.raw
        if ctx.manifest_path.is_symlink():
            plan.notes.append(f"{ctx.manifest_path}: a symbolic link, left as it is")
            continue
        if raw is None or not ctx.is_object:
            why = ctx.read_error or "not a JSON object"
            plan.notes.append(f"{ctx.manifest_path}: not read ({why}); lint says more")
            continue
        edits: list[tuple[int, int, str]] = []
        for index, name, _args, _entry in ctx.grader_entries():
            target = new_name(name)
            if _is_vendored(name) or (target is not None and _is_vendored(target)):
                plan.needs_module = True
            node = ctx.node(("graders", index, "name"))
            if target is None or node is None:
                continue
            edits.append((node.start, node.end, json.dumps(target)))
            plan.renames.append(Rename(ctx.manifest_path, index, name, target))
        if edits:
            data = raw
            for start, end, text in sorted(edits, reverse=True):
                data = data[:start] + text.encode("utf-8") + data[end:]
            plan.manifests[ctx.manifest_path] = (raw, data)
    if plan.needs_module:
        plan.module_new = render_module()
        if plan.module_path.is_file():
            plan.module_old = plan.module_path.read_text(encoding="utf-8", errors="replace")
        plan.init_missing = not plan.init_path.exists()
    return plan


def module_summary(plan: VendorPlan) -> str:
    """One line on what happens to the vendored module."""
    path = plan.module_path
    if not plan.needs_module:
        return "no task names tests_pass or judged_tests: no vendored module needed"
    if not plan.module_changes:
        return f"{path}: up to date"
    if plan.module_old is None:
        lines = plan.module_new.count("\n")
        return f"{path}: new ({lines} lines)"
    header = read_header(plan.module_old)
    if header is None:
        return f"{path}: replaces a file that is not a vendored copy"
    if header.edited:
        return f"{path}: replaces a copy edited by hand (endstate-author {header.version}'s)"
    return f"{path}: replaces the copy written by endstate-author {header.version}"


def render_diff(plan: VendorPlan) -> str:
    """The task.json changes as a unified diff (the module is summarised, not diffed)."""
    chunks: list[str] = []
    for path, (old, new) in plan.manifests.items():
        chunks.extend(
            difflib.unified_diff(
                old.decode("utf-8", errors="replace").splitlines(keepends=True),
                new.decode("utf-8", errors="replace").splitlines(keepends=True),
                fromfile=f"a/{display_path(path)}",
                tofile=f"b/{display_path(path)}",
            )
        )
    return "".join(c if c.endswith("\n") else c + "\n" for c in chunks)


def write_plan(plan: VendorPlan) -> list[Path]:
    """Write the plan; the files written, in order. Each file is replaced atomically."""
    written: list[Path] = []
    if plan.needs_module:
        plan.module_path.parent.mkdir(parents=True, exist_ok=True)
        if plan.init_missing:
            _replace(plan.init_path, INIT_TEXT.encode("utf-8"))
            written.append(plan.init_path)
        if plan.module_changes:
            _replace(plan.module_path, plan.module_new.encode("utf-8"))
            written.append(plan.module_path)
    for path, (_old, new) in plan.manifests.items():
        _replace(path, new)
        written.append(path)
    return written


def _replace(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".endstate-vendor.tmp")
    tmp.write_bytes(data)
    tmp.replace(path)
