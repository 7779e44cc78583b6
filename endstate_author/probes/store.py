"""Suite probes: a red team's confirmed exploit, kept beside the tasks and replayed by prove."""

from __future__ import annotations

import ast
import difflib
import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from endstate_author.probes.catalogue import injection_targets
from endstate_author.probes.diff import Change, unified_diff
from endstate_harness.graders import pyast
from endstate_harness.task import Task

PROBES_DIR = "probes"
PROBE_FILE = "probe.json"
FORMAT = 1
NAME_RE = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")


class ProbeError(ValueError):
    """A suite probe that cannot be read or written (the message says which and why)."""


class NotApplicable(Exception):
    """The probe has no way to replay one of its edits on this task."""


@dataclass(frozen=True)
class Edit:
    path: str
    before_sha256: str | None
    """sha256 of the file in the fixture it was found on (None: the attempt added it)."""
    deleted: bool = False
    role: str = "file"
    """``entry`` (a package's entry file), ``test`` (under the test folder) or ``file``."""
    block: str = ""
    """For an entry edit that only inserted lines: the inserted block."""
    where: str = ""
    """``top`` or ``end`` for such an insertion; "" for any other edit."""
    test_rel: str = ""
    """For a test edit: the path below the test folder."""

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v not in ("", None, False)} | {
            "path": self.path,
            "before_sha256": self.before_sha256,
        }


@dataclass
class SuiteProbe:
    """One saved exploit; ``id`` and ``apply`` match the built-in probes' interface."""

    name: str
    folder: Path
    found_on: str
    edits: list[Edit] = field(default_factory=list)
    explanation: str = ""
    model: str = ""

    @property
    def id(self) -> str:
        return f"{self.name} (suite probe found on {self.found_on})"

    def _after(self, edit: Edit) -> bytes:
        return (self.folder / "files" / edit.path).read_bytes()

    def plan(self, root: Path, targets: list[str], test_dir: str) -> list[tuple[str, Any]]:
        """What replaying on the tree at ``root`` would do: (path, bytes | None to delete,
        or ("block", where, text)). Raises NotApplicable."""
        out: list[tuple[str, Any]] = []
        for edit in self.edits:
            here = root / edit.path
            current = _sha(here.read_bytes()) if here.is_file() else None
            if current == edit.before_sha256:
                out.append((edit.path, None if edit.deleted else self._after(edit)))
            elif edit.role == "entry" and edit.where and targets:
                for target in targets:
                    entry = f"{target}/__init__.py" if (root / target).is_dir() else target
                    out.append((entry, ("block", edit.where, edit.block)))
            elif edit.role == "test" and (root / test_dir).is_dir():
                rel = f"{test_dir.strip('/')}/{edit.test_rel}"
                out.append((rel, None if edit.deleted else self._after(edit)))
            else:
                raise NotApplicable(
                    f"{edit.path} is {'absent' if current is None else 'different'} here and "
                    "its edit is specific to the task it was found on"
                )
        return out

    def applies(self, root: Path, targets: list[str], test_dir: str) -> str | None:
        """None when the probe replays on the tree at ``root``, else why not."""
        try:
            self.plan(root, targets, test_dir)
        except NotApplicable as exc:
            return str(exc)
        return None

    def apply(self, live: Path, targets: list[str], test_dir: str) -> list[str]:
        """Replay on the live tree; returns the paths written or deleted."""
        written = []
        for rel, action in self.plan(live, targets, test_dir):
            path = live / rel
            if action is None:
                path.unlink(missing_ok=True)
            elif isinstance(action, tuple):
                _, where, block = action
                text = path.read_text(encoding="utf-8") if path.is_file() else ""
                path.write_text(insert_block(text, block, where), encoding="utf-8")
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(action)
            written.append(rel)
        return written


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def header_end(text: str) -> int:
    """Lines taken by the module docstring and ``from __future__`` imports (where an
    insertion "at the top" goes, so the code still runs first)."""
    try:
        tree = pyast.parse(text)
    except SyntaxError:
        return 0
    at = 0
    for i, node in enumerate(tree.body):
        is_doc = (
            i == 0
            and isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        )
        is_future = isinstance(node, ast.ImportFrom) and node.module == "__future__"
        if not (is_doc or is_future):
            break
        at = node.end_lineno or at
    return at


def insert_block(text: str, block: str, where: str) -> str:
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    chunk = block if block.endswith("\n") else block + "\n"
    if where == "end":
        return "".join(lines) + chunk
    at = header_end(text)
    return "".join(lines[:at]) + chunk + "".join(lines[at:])


def inserted_block(before: str, after: str) -> tuple[str, str] | None:
    """(block, "top"|"end") when ``after`` is ``before`` with one block inserted at its top
    (after the header) or its end; None for any other edit."""
    a = before.splitlines(keepends=True)
    b = after.splitlines(keepends=True)
    ops = [
        op
        for op in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes()
        if op[0] != "equal"
    ]
    if len(ops) != 1 or ops[0][0] != "insert":
        return None
    _, i1, _, j1, j2 = ops[0]
    block = "".join(b[j1:j2])
    if i1 == len(a):
        return block, "end"
    first_code = header_end(before)
    while first_code < len(a) and (not a[first_code].strip() or a[first_code].lstrip()[0] == "#"):
        first_code += 1  # blank lines and comments after the header are still "the top"
    if i1 <= first_code:
        return block, "top"
    return None


def probe_folders(task: Task) -> list[Path]:
    """The suite probes that apply to ``task``: every folder of ``probes/`` beside its folder
    (but hidden ones). One that is not a probe is listed too, for :func:`suite_probes` to say
    so: a probe that cannot be read is never skipped in silence."""
    folder = task.root.parent / PROBES_DIR
    if not folder.is_dir() or folder.is_symlink() or _is_task(folder):
        return []
    return sorted(
        p for p in folder.iterdir() if not p.name.startswith(".") and (p.is_dir() or p.is_symlink())
    )


def _is_task(folder: Path) -> bool:
    return (folder / "task.json").exists() or (folder / "task.json").is_symlink()


def load_probe(folder: Path) -> SuiteProbe:
    try:
        data = json.loads((folder / PROBE_FILE).read_text(encoding="utf-8"))
        edits = [Edit(**e) for e in data["edits"]]
        probe = SuiteProbe(
            name=str(data["name"]),
            folder=folder,
            found_on=str(data.get("found_on", "")),
            edits=edits,
            explanation=str(data.get("explanation", "")),
            model=str(data.get("model", "")),
        )
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ProbeError(f"{folder / PROBE_FILE}: not a suite probe: {exc}") from exc
    for edit in edits:
        for rel in (edit.path, edit.test_rel):
            parts = rel.split("/")
            if rel.startswith("/") or ".." in parts or "\\" in rel:
                raise ProbeError(f"{folder / PROBE_FILE}: path {rel!r} leaves the tree")
        if not edit.deleted and not (folder / "files" / edit.path).is_file():
            raise ProbeError(f"{folder}: files/{edit.path} is missing")
    return probe


def suite_probes(task: Task) -> list[SuiteProbe | ProbeError]:
    """Every saved probe beside ``task``, or the error that keeps one from being replayed (the
    proof then says it was not assessed, ES908): a ``probes`` that is a link or a file, a
    probe folder that is a link or lacks its probe.json."""
    root = task.root.parent / PROBES_DIR
    if _is_task(root):
        return []  # a task folder named "probes": a suite of that layout saves no probes
    if root.is_symlink() or (root.exists() and not root.is_dir()):
        kind = "a link" if root.is_symlink() else "not a folder"
        return [ProbeError(f"{root}: the suite's probes folder is {kind}; none was replayed")]
    out: list[SuiteProbe | ProbeError] = []
    for folder in probe_folders(task):
        if folder.is_symlink():
            out.append(ProbeError(f"{folder}: a suite probe must be a folder, not a link"))
            continue
        try:
            out.append(load_probe(folder))
        except ProbeError as exc:
            out.append(exc)
    return out


def check_name(name: str) -> str | None:
    """None when ``name`` can name a probe folder, else why not."""
    if NAME_RE.match(name):
        return None
    return (
        f"probe name {name!r} must be lower-case letters, digits, '.', '_' or '-' "
        "(at most 64, starting with a letter or digit)"
    )


def save_probe(
    task: Task,
    name: str,
    items: list[Change],
    *,
    test_dir: str,
    explanation: str = "",
    model: str = "",
) -> Path:
    """Write ``probes/NAME/`` beside ``task``'s folder from an attempt's changes.

    Raises:
        ProbeError: the folder exists already (a saved probe is never overwritten) or
            cannot be written.
    """
    folder = task.root.parent / PROBES_DIR / name
    if folder.exists() or folder.is_symlink():
        raise ProbeError(f"{folder} exists already; choose another --save-probe name")
    targets = injection_targets(task.fixture)
    entries = {f"{t}/__init__.py" if (task.fixture / t).is_dir() else t for t in targets}
    start = test_dir.strip("/")
    edits = []
    for change in items:
        block, where = "", ""
        if change.path in entries and change.after is not None:
            found = inserted_block(
                (change.before or b"").decode("utf-8", "replace"),
                change.after.decode("utf-8", "replace"),
            )
            if found is not None:
                block, where = found
        in_tests = bool(start) and change.path.startswith(start + "/")
        role = "entry" if change.path in entries else ("test" if in_tests else "file")
        edits.append(
            Edit(
                path=change.path,
                before_sha256=None if change.before is None else _sha(change.before),
                deleted=change.after is None,
                role=role,
                block=block,
                where=where,
                test_rel=change.path[len(start) + 1 :] if in_tests else "",
            )
        )
    try:
        (folder / "files").mkdir(parents=True)
        for change in items:
            if change.after is not None:
                target = folder / "files" / change.path
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(change.after)
        (folder / "diff.patch").write_text(unified_diff(items), encoding="utf-8")
        data = {
            "format": FORMAT,
            "name": name,
            "found_on": task.id,
            "model": model,
            "explanation": explanation,
            "edits": [e.to_json() for e in edits],
        }
        (folder / PROBE_FILE).write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    except OSError as exc:
        raise ProbeError(f"cannot write {folder}: {exc}") from exc
    return folder
