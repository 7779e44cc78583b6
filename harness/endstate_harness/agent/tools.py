"""The agent's tools: read, write, edit, glob, grep and bash."""

from __future__ import annotations

import fnmatch
import os
import re
import subprocess
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from endstate_harness.agent.argcheck import fits
from endstate_harness.layout import PRUNED_NAMES
from endstate_harness.process.cleanup import defer_signals
from endstate_harness.process.groups import kill_group
from endstate_harness.sandbox.base import ExecResult, PathEscapeError

MAX_OUTPUT_CHARS = 20_000
DEFAULT_BASH_TIMEOUT_S = 120.0


class ToolError(Exception):
    """An expected tool failure, answered to the model as an error result."""


@runtime_checkable
class Workspace(Protocol):
    """What the tools need: a confined path resolver and a shell."""

    @property
    def live(self) -> Path: ...

    def path(self, rel: str) -> Path: ...

    def run(self, command: str, *, timeout_s: float | None = None) -> ExecResult: ...


def confine(root: Path, rel: str) -> Path:
    """``rel`` resolved inside ``root``; :class:`PathEscapeError` when it would leave it.

    ``realpath`` resolves every symlink on the way, so a link that points outside is
    caught here, before anything opens the path.
    """
    if not isinstance(rel, str) or not rel.strip():
        raise PathEscapeError("empty path")
    if "\x00" in rel:
        raise PathEscapeError(f"path {rel!r} contains a NUL byte")
    if os.path.isabs(rel):
        raise PathEscapeError(f"path {rel!r} is absolute; paths are relative to the workspace")
    base = os.path.realpath(root)
    real = os.path.realpath(os.path.join(base, rel))
    if real != base and not real.startswith(base + os.sep):
        raise PathEscapeError(f"path {rel!r} leaves the workspace")
    return Path(real)


def clean_env(home: Path) -> dict[str, str]:
    """A small deterministic environment: no inherited secrets reach the agent's shell."""
    return {
        "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONHASHSEED": "0",
    }


class DirectoryWorkspace:
    """A plain folder, worked in place: what ``endstate-author run --workdir`` uses.

    It does not isolate anything: commands run on this machine as this user. Its shell runs
    each command in its own process group with a clean environment and kills the whole
    group on timeout, so a runaway command leaves no orphans.
    """

    def __init__(self, root: Path) -> None:
        if not root.is_dir():
            raise ToolError(f"not a directory: {root}")
        self._root = root.resolve()

    @property
    def live(self) -> Path:
        return self._root

    def path(self, rel: str) -> Path:
        return confine(self._root, rel)

    def run(self, command: str, *, timeout_s: float | None = None) -> ExecResult:
        proc: subprocess.Popen[bytes] | None = None
        try:
            # started and recorded as one step (a signal meanwhile is raised as the section
            # ends, inside this try): the except below ends it
            with defer_signals():
                proc = subprocess.Popen(
                    ["/bin/sh", "-c", command],
                    cwd=self._root,
                    env=clean_env(self._root),
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    start_new_session=True,
                )
            out, err = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            assert proc is not None  # only its wait times out
            kill_group(proc.pid)
            out, err = proc.communicate()
            return ExecResult(-9, _text(out), _text(err), timed_out=True)
        except BaseException:
            if proc is not None:
                kill_group(proc.pid)
                proc.wait()
            raise
        return ExecResult(proc.returncode, _text(out), _text(err))


def _text(data: bytes | None) -> str:
    return (data or b"").decode("utf-8", errors="replace")


def truncate(text: str, limit: int = MAX_OUTPUT_CHARS) -> str:
    """Cap a tool's output: one huge result must not eat the whole context budget."""
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n... [{len(text) - limit} more characters not shown]"


_VALIDATORS: dict[int, Any] = {}


def _validator(schema: dict[str, Any]) -> Any:
    """A validator for a tool's schema, made (and the schema checked) once, not per call:
    ``jsonschema.validate`` does both each time, most of a scripted run's time in prove."""
    # ~50-75 ms to import, and only arguments that do not fit (or a schema argcheck does
    # not cover) need it: deferred (see endstate_harness.agent.argcheck)
    import jsonschema

    found = _VALIDATORS.get(id(schema))
    if found is None or found.schema is not schema:
        cls = jsonschema.validators.validator_for(schema)
        cls.check_schema(schema)
        found = _VALIDATORS[id(schema)] = cls(schema)
    return found


def argument_error(schema: dict[str, Any], arguments: Any) -> str | None:
    """What is wrong with ``arguments`` under ``schema``, in jsonschema's words (its best
    match, what ``jsonschema.validate`` would raise); None when they are valid."""
    if fits(schema, arguments):
        return None
    import jsonschema  # deferred, as in _validator (already imported by it)

    error = jsonschema.exceptions.best_match(_validator(schema).iter_errors(arguments))
    return None if error is None else error.message


class Tool(ABC):
    """One tool: a name, a JSON schema, an idempotence flag and ``run``."""

    name: str
    description: str
    idempotent: bool = True
    parameters: dict[str, Any]

    def spec(self) -> dict[str, Any]:
        """The definition the model is given (name, description, JSON-schema parameters)."""
        return {"name": self.name, "description": self.description, "parameters": self.parameters}

    def __call__(self, arguments: dict[str, Any], workspace: Workspace, **limits: Any) -> str:
        """Validate the arguments against the schema, then run; every failure is a ToolError."""
        error = argument_error(self.parameters, arguments)
        if error is not None:
            raise ToolError(f"bad arguments for {self.name}: {error}") from None
        try:
            return truncate(self.run(arguments, workspace, **limits))
        except PathEscapeError as exc:
            raise ToolError(str(exc)) from None
        except UnicodeDecodeError:
            raise ToolError("the file is not UTF-8 text") from None
        except IsADirectoryError:
            raise ToolError("that path is a directory") from None
        except OSError as exc:
            raise ToolError(f"{type(exc).__name__}: {exc.strerror or exc}") from None

    @abstractmethod
    def run(self, arguments: dict[str, Any], workspace: Workspace, **limits: Any) -> str:
        """Do the work; raise ToolError for an expected failure."""


def _obj(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


_PATH = {"type": "string", "description": "Path relative to the working directory."}


class ReadTool(Tool):
    name = "read"
    description = (
        "Read a UTF-8 text file. Optional 1-based `offset` line and `limit` line count "
        "for large files."
    )
    parameters = _obj(
        {
            "path": _PATH,
            "offset": {"type": "integer", "minimum": 1},
            "limit": {"type": "integer", "minimum": 1},
        },
        ["path"],
    )

    def run(self, arguments: dict[str, Any], workspace: Workspace, **limits: Any) -> str:
        path = workspace.path(arguments["path"])
        if not path.is_file():
            raise ToolError(f"no such file: {arguments['path']}")
        text = path.read_text(encoding="utf-8")
        if "offset" in arguments or "limit" in arguments:
            lines = text.splitlines(keepends=True)
            start = arguments.get("offset", 1) - 1
            end = start + arguments["limit"] if "limit" in arguments else len(lines)
            text = "".join(lines[start:end])
        return text


class WriteTool(Tool):
    name = "write"
    description = "Write a UTF-8 text file, replacing it or creating it and its parent folders."
    parameters = _obj({"path": _PATH, "content": {"type": "string"}}, ["path", "content"])

    def run(self, arguments: dict[str, Any], workspace: Workspace, **limits: Any) -> str:
        path = workspace.path(arguments["path"])
        if path.is_dir():
            raise ToolError(f"{arguments['path']} is a directory")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(arguments["content"], encoding="utf-8")
        return f"wrote {len(arguments['content'])} characters to {arguments['path']}"


class EditTool(Tool):
    name = "edit"
    description = (
        "Replace an exact string in a file. `old` must occur exactly once unless "
        "`replace_all` is true."
    )
    parameters = _obj(
        {
            "path": _PATH,
            "old": {"type": "string", "minLength": 1},
            "new": {"type": "string"},
            "replace_all": {"type": "boolean"},
        },
        ["path", "old", "new"],
    )

    def run(self, arguments: dict[str, Any], workspace: Workspace, **limits: Any) -> str:
        path = workspace.path(arguments["path"])
        if not path.is_file():
            raise ToolError(f"no such file: {arguments['path']}")
        text = path.read_text(encoding="utf-8")
        old, new = arguments["old"], arguments["new"]
        if new and new in text and old not in text.replace(new, "\x00"):
            # Every remaining `old` sits inside an applied `new` (or none is left): the edit
            # is already done. Without this, re-running `demo` -> `demo, fixed` after a
            # resume would give `demo, fixed, fixed`: edit is idempotent only by this rule.
            return f"{arguments['path']} already has this edit applied; nothing to do"
        count = text.count(old)
        if count == 0:
            raise ToolError(f"`old` was not found in {arguments['path']}")
        if count > 1 and not arguments.get("replace_all", False):
            raise ToolError(f"`old` occurs {count} times; make it unique or set replace_all")
        path.write_text(text.replace(old, new), encoding="utf-8")
        return f"replaced {count} occurrence(s) in {arguments['path']}"


def _walk_files(root: Path) -> list[str]:
    """Relative forward-slash paths of every file below ``root``; symlinks are not followed."""
    found: list[str] = []
    for folder, dirs, files in os.walk(root, followlinks=False):
        dirs[:] = sorted(d for d in dirs if d not in PRUNED_NAMES)
        rel_folder = os.path.relpath(folder, root)
        for name in sorted(files):
            rel = name if rel_folder == "." else f"{rel_folder}/{name}"
            found.append(rel.replace(os.sep, "/"))
    return found


def glob_match(rel: str, pattern: str) -> bool:
    """fnmatch on forward-slash paths, as the graders use (``*`` crosses folders).

    A leading ``**/`` also matches at the top level, so ``**/*.py`` finds ``a.py``.
    """
    if fnmatch.fnmatchcase(rel, pattern):
        return True
    while pattern.startswith("**/"):
        pattern = pattern[3:]
        if fnmatch.fnmatchcase(rel, pattern):
            return True
    return False


class GlobTool(Tool):
    name = "glob"
    description = "List files whose relative path matches a glob (`*` also crosses folders)."
    parameters = _obj({"pattern": {"type": "string", "minLength": 1}}, ["pattern"])

    def run(self, arguments: dict[str, Any], workspace: Workspace, **limits: Any) -> str:
        hits = [r for r in _walk_files(workspace.live) if glob_match(r, arguments["pattern"])]
        return "\n".join(hits) if hits else "(no matches)"


class GrepTool(Tool):
    name = "grep"
    description = (
        "Search text files for a Python regex; answers path:line:text. `glob` narrows the "
        "files searched."
    )
    parameters = _obj(
        {
            "pattern": {"type": "string", "minLength": 1},
            "glob": {"type": "string"},
            "ignore_case": {"type": "boolean"},
        },
        ["pattern"],
    )

    def run(self, arguments: dict[str, Any], workspace: Workspace, **limits: Any) -> str:
        flags = re.IGNORECASE if arguments.get("ignore_case") else 0
        try:
            regex = re.compile(arguments["pattern"], flags)
        except re.error as exc:
            raise ToolError(f"invalid regex: {exc}") from None
        pattern = arguments.get("glob", "*")
        root = workspace.live
        hits: list[str] = []
        size = 0
        for rel in _walk_files(root):
            if not glob_match(rel, pattern):
                continue
            try:
                text = (root / rel).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            for number, line in enumerate(text.splitlines(), start=1):
                if regex.search(line):
                    hits.append(f"{rel}:{number}:{line.rstrip()}")
                    size += len(hits[-1])
            if size > MAX_OUTPUT_CHARS:
                break
        return "\n".join(hits) if hits else "(no matches)"


class BashTool(Tool):
    name = "bash"
    description = "Run a shell command in the working directory; answers exit code and output."
    idempotent = False
    parameters = _obj(
        {
            "command": {"type": "string", "minLength": 1},
            "timeout_s": {"type": "number", "exclusiveMinimum": 0},
        },
        ["command"],
    )

    def run(self, arguments: dict[str, Any], workspace: Workspace, **limits: Any) -> str:
        ceiling = float(limits.get("timeout_s") or DEFAULT_BASH_TIMEOUT_S)
        timeout = min(float(arguments.get("timeout_s", ceiling)), ceiling)
        result = workspace.run(arguments["command"], timeout_s=timeout)
        parts = [f"exit_code: {result.exit_code}"]
        if result.timed_out:
            parts.append(f"timed out after {timeout:g}s; the command was killed")
        if result.stdout:
            parts.append(f"stdout:\n{result.stdout}")
        if result.stderr:
            parts.append(f"stderr:\n{result.stderr}")
        return "\n".join(parts)


def default_tools() -> list[Tool]:
    """The six tools of task-format.md §5, in a stable order."""
    return [ReadTool(), WriteTool(), EditTool(), GlobTool(), GrepTool(), BashTool()]


IDEMPOTENT_TOOLS = frozenset(t.name for t in default_tools() if t.idempotent)
