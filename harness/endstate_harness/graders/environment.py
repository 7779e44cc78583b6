"""Whose failure is it? The one rule that tells an environment failure from a task failure:
eval records an *error*, prove an *unassessed* check (ES908). The rule, and why the end
state cannot game it: docs/architecture.md.
"""

from __future__ import annotations

import inspect
import re
import shlex
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Literal

from endstate_harness.errors import SandboxDied, SandboxError
from endstate_harness.graders.judge.grader import judged_tests
from endstate_harness.graders.unittest_grader import tests_pass
from endstate_harness.sandbox.base import ExecResult, Sandbox
from endstate_harness.verdict import Verdict

if TYPE_CHECKING:  # the pydantic model, only as a type here
    from endstate_harness.task import GraderSpec

Presence = Literal["present", "absent", "broken", "unknown"]
"""What the sandbox says of a program: found, not found, the sandbox cannot run a shell at
all, or no answer (the probe timed out, the sandbox died)."""

ProgramProbe = Callable[[str], Presence]

EXEC_FAILED = ("OCI runtime exec failed", "exec failed: unable to start container process")
"""What Docker says when it cannot start the shell of a command at all."""

_INTERPRETED = {
    "tests_pass": inspect.signature(tests_pass).parameters["python"].default,
    "judged_tests": inspect.signature(judged_tests).parameters["python"].default,
}
_WRAPPERS = frozenset(
    {"env", "exec", "command", "nohup", "time", "builtin", "!", "{", "}"}
    | {"if", "then", "else", "elif", "fi", "do", "done", "while", "until"}
)
_REDIRECTION = re.compile(r"[0-9]*[<>]+&?[0-9-]*(?:\s*[^\s;&|()<>]+)?")
_SEPARATORS = frozenset({";", "&&", "||", "|", "&", "(", ")", ";;", "|&", "\n"})
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
_BARE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]*")


def environment_failure(
    verdict: Verdict,
    *,
    specs: Sequence[GraderSpec] = (),
    probe: ProgramProbe | None = None,
) -> str | None:
    """Why a failing ``verdict`` is the environment's fault, or None when it is the task's.

    ``specs`` are the graders that produced the verdict (their commands and interpreters are
    the programs a "not found" may name); ``probe`` answers whether a program is on the
    sandbox's PATH (:func:`program_probe`). Without a probe no message is trusted and only a
    grader that could not be loaded counts. The rule is the module docstring's.
    """
    if verdict.passed:
        return None
    for spec in specs:
        marker = f"{spec.name}: cannot resolve: "
        if marker in verdict.reason:
            why = verdict.reason.split(marker, 1)[1].split("; ")[0]
            return f"the grader {spec.name} could not be loaded: {why}"
    texts = [verdict.reason, *(f"{c.name}\n{c.detail}" for c in verdict.checks if not c.passed)]
    return _missing_program(programs_of(specs), texts, probe)


def exec_environment_failure(
    command: str, result: ExecResult, probe: ProgramProbe | None
) -> str | None:
    """The same rule for one command and what it did: exit 126/127 with the shell's message
    naming a program ``command`` runs, and that program absent from the sandbox."""
    if result.timed_out or result.exit_code not in (126, 127):
        return None
    return _missing_program(command_programs(command), [result.output], probe)


def program_probe(sandbox: Sandbox, timeout_s: float = 30.0) -> ProgramProbe:
    """Ask ``sandbox`` whether a program is on its PATH (``command -v``), memoised."""
    answers: dict[str, Presence] = {}

    def probe(program: str) -> Presence:
        if program not in answers:
            answers[program] = _ask(sandbox, program, timeout_s)
        return answers[program]

    return probe


def _ask(sandbox: Sandbox, program: str, timeout_s: float) -> Presence:
    try:
        result = sandbox.run(f"command -v {shlex.quote(program)}", timeout_s=timeout_s)
    except SandboxDied:
        return "unknown"  # the end state's doing, decided elsewhere
    except SandboxError:
        return "broken"
    if result.timed_out:
        return "unknown"
    if any(mark in result.output for mark in EXEC_FAILED):
        return "broken"
    if result.exit_code == 0 and result.stdout.strip():
        return "present"
    if result.exit_code in (1, 127) and not result.output.strip():
        return "absent"
    return "unknown"


def programs_of(specs: Iterable[GraderSpec]) -> list[str]:
    """The bare program names the graders run: each simple command's first word of a
    ``command`` argument, and the interpreter of the in-sandbox unittest graders."""
    found: list[str] = []
    for spec in specs:
        command = spec.args.get("command")
        if isinstance(command, str):
            found.extend(command_programs(command))
        python = spec.args.get("python")
        short = re.split(r"[:.]", spec.name)[-1]
        if isinstance(python, str):
            found.append(python)
        elif short in _INTERPRETED:
            found.append(_INTERPRETED[short])
    return [p for p in dict.fromkeys(found) if _BARE.fullmatch(p)]


def command_programs(command: str) -> list[str]:
    """The first word of every simple command of a shell command line, bare names only."""
    lexer = shlex.shlex(_REDIRECTION.sub(" ", command), posix=True, punctuation_chars=";&|()\n")
    lexer.whitespace = " \t\r"
    lexer.whitespace_split = True
    try:
        words = list(lexer)
    except ValueError:  # unbalanced quotes: the shell fails on its own; take the first word
        words = command.split()[:1]
    found: list[str] = []
    expecting = True
    for word in words:
        if word in _SEPARATORS or set(word) <= set(";&|()\n"):
            expecting = True
        elif expecting and not (_ASSIGNMENT.match(word) or word in _WRAPPERS):
            if not word.startswith("-"):
                found.append(word)
                expecting = False
    return [p for p in dict.fromkeys(found) if _BARE.fullmatch(p)]


def _not_found(program: str, text: str) -> bool:
    p = re.escape(program)
    return bool(
        re.search(rf"(?m)(?:^|[\s:]){p}: (?:command )?not found", text)
        or re.search(rf"(?:^|[\s:]){p}: (?:Permission denied|cannot execute)", text)
        or re.search(rf"No such file or directory: '{p}'", text)
        or re.search(rf"'{p}': No such file or directory", text)
        or re.search(rf'exec: "{p}": executable file not found', text)
    )


def _missing_program(
    programs: Sequence[str], texts: Sequence[str], probe: ProgramProbe | None
) -> str | None:
    if probe is None:
        return None
    for program in programs:
        said = next((line for t in texts for line in _lines(t) if _not_found(program, line)), None)
        if said is None:
            continue
        presence = probe(program)
        if presence == "absent":
            return (
                f"`{program}` is not installed in the sandbox (its PATH has no `{program}`), "
                f"so the graders could not run: {said}"
            )
        if presence == "broken":
            return f"the sandbox cannot run commands: {said}"
    failed = next((line for t in texts for line in _lines(t) if _exec_failed(line)), None)
    if failed is not None and probe("sh") == "broken":
        return f"the sandbox cannot run commands: {failed}"
    return None


def _exec_failed(line: str) -> bool:
    return any(mark in line for mark in EXEC_FAILED)


def _lines(text: str) -> list[str]:
    return [line.strip()[:200] for line in text.splitlines() if line.strip()]
