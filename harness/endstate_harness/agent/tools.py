"""The agent's tools: read, write, edit, glob, grep and bash.

The tree they work on is the agent's, made with a shell that can leave links out of it,
fifos, device nodes and trees deeper than any recursion limit. So every file tool goes
through one confinement, :mod:`endstate_harness.agent.confined` (a directory descriptor,
names reached one component at a time with ``O_NOFOLLOW``, links followed only inside the
tree, special files refused before they are opened, every walk and answer bounded). read,
write, edit and glob do bounded work there, in this process; grep runs the same module as a
program through the workspace's own shell (behind the sandbox's walls, with the call's
deadline), because a regular expression can backtrack for ever and cannot be interrupted
here. bash runs in the workspace's shell with the call's deadline.
"""

from __future__ import annotations

import functools
import json
import os
import shlex
import subprocess
import sys
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import endstate_harness.agent.confined as confined
from endstate_harness.agent.argcheck import fits
from endstate_harness.layout import PRUNED_NAMES
from endstate_harness.process.cleanup import defer_signals
from endstate_harness.process.groups import kill_group
from endstate_harness.sandbox.base import ExecResult, PathEscapeError

MAX_OUTPUT_CHARS = 20_000
DEFAULT_BASH_TIMEOUT_S = 120.0
FILE_TOOL_TIMEOUT_S = 60.0
"""The deadline of a file tool run in the workspace's shell (grep) when the loop gives none."""


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

    python = sys.executable or "python3"
    """What runs grep's program here: this interpreter (its commands run on this machine
    anyway), not a ``python3`` on PATH that may be a slow shim."""

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
        except (PathEscapeError, confined.Refused) as exc:
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
        with _tree(workspace) as tree:
            return confined.read(
                tree, arguments["path"], arguments.get("offset"), arguments.get("limit")
            )


class WriteTool(Tool):
    name = "write"
    description = "Write a UTF-8 text file, replacing it or creating it and its parent folders."
    parameters = _obj({"path": _PATH, "content": {"type": "string"}}, ["path", "content"])

    def run(self, arguments: dict[str, Any], workspace: Workspace, **limits: Any) -> str:
        with _tree(workspace) as tree:
            return confined.write(tree, arguments["path"], arguments["content"])


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
        with _tree(workspace) as tree:
            return confined.edit(
                tree,
                arguments["path"],
                arguments["old"],
                arguments["new"],
                bool(arguments.get("replace_all", False)),
            )


glob_match = confined.glob_match


class GlobTool(Tool):
    name = "glob"
    description = "List files whose relative path matches a glob (`*` also crosses folders)."
    parameters = _obj({"pattern": {"type": "string", "minLength": 1}}, ["pattern"])

    def run(self, arguments: dict[str, Any], workspace: Workspace, **limits: Any) -> str:
        with _tree(workspace) as tree:
            return confined.glob(tree, arguments["pattern"], PRUNED_NAMES)


class GrepTool(Tool):
    """Runs where the agent's shell runs (see :func:`_shipped`): a regular expression can
    backtrack for ever, and ``re`` cannot be interrupted in this process."""

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
        request = {"op": "grep", "prune": sorted(PRUNED_NAMES), **arguments}
        return _shipped(workspace, request, float(limits.get("timeout_s") or FILE_TOOL_TIMEOUT_S))


def _tree(workspace: Workspace) -> confined.Tree:
    """The workspace's live tree, held by a descriptor (see :mod:`confined`)."""
    return confined.Tree(str(workspace.live))


@functools.cache
def _program() -> str:
    return Path(confined.__file__).read_text(encoding="utf-8")


def _shipped(workspace: Workspace, request: dict[str, Any], timeout_s: float) -> str:
    """Run :mod:`confined` as a program through the workspace's own shell: behind the
    sandbox's walls, with its deadline; a call that does not finish in time is killed and
    answered as an error."""
    python = getattr(workspace, "python", "python3")
    command = shlex.join([python, "-s", "-S", "-c", _program(), json.dumps(request)])
    result = workspace.run(command, timeout_s=timeout_s)
    tool = request["op"]
    if result.timed_out:
        raise ToolError(
            f"{tool} did not finish within {timeout_s:g}s and was stopped (a pattern that "
            "backtracks, or a very large tree?)"
        )
    if result.exit_code == 0:
        return result.stdout
    if result.exit_code == confined.REFUSED_EXIT and result.stdout:
        raise ToolError(result.stdout)
    detail = (result.stderr or result.stdout).strip()[-500:]
    raise ToolError(f"{tool} could not run in the workspace (exit code {result.exit_code}): "
                    f"{detail}")


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
