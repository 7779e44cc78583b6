"""Whose failure is it? The one rule that tells an environment failure from a task failure:
eval records an *error*, prove an *unassessed* check (ES908). The rule, and why the end
state cannot game it: docs/architecture.md.
"""

from __future__ import annotations

import inspect
import re
import shlex
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Literal

from endstate_harness.errors import SandboxDied, SandboxError
from endstate_harness.graders.names import RECORDS, TEST_GRADERS
from endstate_harness.sandbox import warm
from endstate_harness.sandbox.base import ExecResult, Sandbox
from endstate_harness.verdict import Verdict

if TYPE_CHECKING:  # the pydantic model, only as a type here
    from endstate_harness.task import GraderSpec

Presence = Literal["present", "absent", "broken", "unknown"]
"""What the sandbox says of a program: found, not found, the sandbox cannot run a shell at
all, or no answer (the probe timed out, the sandbox died)."""

ProgramProbe = Callable[[str], Presence]

_INTERPRETED = {
    name: inspect.signature(RECORDS[name].load()).parameters["python"].default
    for name in sorted(TEST_GRADERS)
}
"""The interpreter each unittest grader runs when its ``python`` argument is not given."""
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

    Decided from typed facts only, never from the verdict's words (its reason and details
    quote the end state, so any marker in them could be the agent's):

    * the harness set :attr:`Verdict.environment` where it failed itself (a grader that
      could not be resolved);
    * a program the graders run (``specs``: each command's programs, the test graders'
      interpreter — the task's words, never the agent's) is absent from the sandbox's PATH,
      or the sandbox cannot start a shell at all, as ``probe`` (:func:`program_probe`: the
      harness's own ``command -v``, read by its exit code) answers. The agent cannot remove
      a program from a read-only image, so an "absent" cannot be forged; a grader that runs
      an absent program cannot have judged anything. Without a probe only the field counts.
    """
    if verdict.passed:
        return None
    if verdict.environment is not None:
        return verdict.environment.detail
    if probe is None:
        return None
    return _missing_program(programs_of(specs), probe)


def exec_environment_failure(
    command: str, result: ExecResult, probe: ProgramProbe | None
) -> str | None:
    """The same rule for one command and what it did: exit 126/127 (what a shell answers when
    it cannot run a program; the code under test can exit so too, which is why only the
    probe's answer decides) and a program ``command`` runs absent from the sandbox."""
    if result.timed_out or result.exit_code not in (126, 127) or probe is None:
        return None
    return _missing_program(command_programs(command), probe)


def program_probe(sandbox: Sandbox, timeout_s: float = 30.0) -> ProgramProbe:
    """Ask ``sandbox`` whether a program is on its PATH (``command -v``), memoised.

    Every failing verdict whose graders run a program is probed (no words decide whether to
    look), so a definite answer is also kept for every sandbox of the same environment
    (:func:`_environment_key`: the image, or the host PATH and the walls): it depends only on
    a read-only image or host folders bound read-only, which no sandboxed code can change.
    "broken" and "unknown" describe one sandbox and are never shared."""
    answers: dict[str, Presence] = {}
    key = _environment_key(sandbox)

    def probe(program: str) -> Presence:
        if program not in answers:
            answers[program] = (_shared_answer(sandbox, key, program, timeout_s)
                                if key is not None else _ask(sandbox, program, timeout_s))
        return answers[program]

    return probe


_KNOWN: dict[tuple[tuple[str, ...], str], Presence] = {}
"""Definite answers by environment and program (see :func:`program_probe`)."""
_ASKING: dict[tuple[tuple[str, ...], str], threading.Lock] = {}
_ASKING_LOCK = threading.Lock()


def _shared_answer(sandbox: Sandbox, key: tuple[str, ...], program: str,
                   timeout_s: float) -> Presence:
    """The environment's definite answer, asked at most once at a time per environment and
    program: a grading that needs it while another's probe runs waits for that answer instead
    of starting a second probe. Why: the probe is a fresh process behind fresh walls (a
    shell's builtin, which no warm interpreter can run), ~15 ms idle and ~0.1 s on a loaded
    machine, and prove's first gradings fail at once by design (the fixture's, the
    defects'): each used to pay it side by side, on the path of the first checks. An answer
    that is not definite ("broken", "unknown") stays this sandbox's own, as before; the next
    grading then asks for itself. A program that started as a warm interpreter in the same
    environment (the judge's child's ``python3``, which every ``judged_tests`` grading forks
    from) is present without asking (:func:`endstate_harness.sandbox.warm.started`): then no
    grading starts a process of its own to ask. Only ever "present", from the harness's own
    start: an answer that leaves a failure a failure, never one that excuses it."""
    with _ASKING_LOCK:
        lock = _ASKING.setdefault((key, program), threading.Lock())
    with lock:
        known = _KNOWN.get((key, program))
        if known is not None:
            return known
        if key[0] == "path" and warm.started(key[1], key[2], program):
            found: Presence = "present"  # the warm interpreter of it started there
        else:
            found = _ask(sandbox, program, timeout_s)
        if found in ("present", "absent"):
            _KNOWN[(key, program)] = found
        return found


def _environment_key(sandbox: Sandbox) -> tuple[str, ...] | None:
    """What decides which programs a sandbox's PATH finds: a container's image, or a local
    sandbox's PATH and walls; None for a sandbox that says neither (never shared)."""
    image = getattr(sandbox, "image", None)
    if isinstance(image, str):
        return ("image", image)
    path_env = getattr(sandbox, "path_env", None)
    if isinstance(path_env, str):
        return ("path", path_env, sandbox.walls())
    return None


def _ask(sandbox: Sandbox, program: str, timeout_s: float) -> Presence:
    try:
        result = sandbox.run(f"command -v {shlex.quote(program)}", timeout_s=timeout_s)
    except SandboxDied:
        return "unknown"  # the end state's doing, decided elsewhere
    except SandboxError:
        return "broken"
    if result.timed_out:
        return "unknown"
    if result.exit_code == 0 and result.stdout.strip():
        return "present"
    if result.exit_code in (1, 127) and not result.output.strip():
        return "absent"
    if result.exit_code in (126, 127):
        # ``command -v`` is a builtin that prints nothing when it finds nothing: 126, or
        # 127 with words, is the shell itself not starting (Docker's "exec failed")
        return "broken"
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
    previous = ""
    for word in words:
        if word in _SEPARATORS or set(word) <= set(";&|()\n"):
            expecting = True
        elif expecting and previous == "command" and word in ("-v", "-V"):
            expecting = False  # ``command -v x`` asks whether x exists: it runs nothing
        elif expecting and not (_ASSIGNMENT.match(word) or word in _WRAPPERS):
            if not word.startswith("-"):
                found.append(word)
                expecting = False
        previous = word
    return [p for p in dict.fromkeys(found) if _BARE.fullmatch(p)]


def _missing_program(programs: Sequence[str], probe: ProgramProbe) -> str | None:
    for program in programs:
        presence = probe(program)
        if presence == "absent":
            return (
                f"`{program}` is not installed in the sandbox (its PATH has no `{program}`), "
                f"so the graders could not run"
            )
        if presence == "broken":
            return (
                f"the sandbox cannot run commands (it could not start a shell to look for "
                f"`{program}`)"
            )
    return None
