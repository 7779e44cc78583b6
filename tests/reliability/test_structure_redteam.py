"""Red team, issue 42 class 5: structure graders must read the program Python runs.

Each payload takes a shipped refactor task's solution (which delegates) and makes the name the
grader checks hold, when Python runs the module, the task's *original* code (which carries its
own logic and calls nothing): a binding after the ``def`` in several shapes, a decorator, a
write of the namespace by name, a write from another module, and statements a ``# coding:
utf-7`` declaration hides in what UTF-8 reads as a comment. Every payload keeps the behaviour
right, so every grader but the structure one passes (asserted): on the code before this test
the whole task passed (the cell was beaten). Now ``delegates_to`` fails it, with a reason.

The end state is built without an agent (prove's grading: the solution, then the payload,
sealed, the holdout staged) in the local sandbox, and for two payloads per task in Docker.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from endstate_author.prove.grading import grade_end_state
from endstate_harness.sandbox.choice import SandboxChoice
from endstate_harness.task import Task, load_task

ROOT = Path(__file__).resolve().parents[2]


class Target:
    """A shipped refactor task: the module and name its ``delegates_to`` checks, the
    companion module the task lets the agent change too, and the original code."""

    def __init__(self, task: str, module: str, name: str, companion: str, legacy: str) -> None:
        self.task = task
        self.path = module.replace(".", "/") + ".py"
        self.module = module
        self.name = name
        self.companion = companion
        self.legacy = legacy

    def solution(self, rel: str) -> str:
        return (ROOT / "tasks" / self.task / "solution" / rel).read_text(encoding="utf-8")


MONEY = Target(
    "refactor-money-formatting", "money.format", "format_usd", "money/currencies.py",
    '''
def _legacy(amount_minor: int) -> str:
    sign = "-" if amount_minor < 0 else ""
    whole, cents = divmod(abs(amount_minor), 100)
    digits = f"{whole:,}"
    return f"{sign}${digits}.{cents:02d}"
''',
)
RETRY = Target(
    "refactor-retry-backoff", "retrying.policy", "retry", "retrying/backoff.py",
    '''
def _legacy(call, *, attempts=4, base=0.5, factor=2.0, cap=30.0, retry_on=(OSError,),
            sleep=time.sleep):
    if attempts < 1:
        raise ValueError(f"attempts must be at least 1, not {attempts}")
    for attempt in range(attempts):
        try:
            return call()
        except retry_on as exc:
            if attempt == attempts - 1:
                raise RetryError(f"gave up after {attempts} attempts") from exc
            delay = base * factor**attempt
            if delay > cap:
                delay = cap
            sleep(delay)
    raise AssertionError("unreachable")
''',
)


def _under(header: str, target: Target) -> str:
    body = target.legacy.replace("def _legacy(", f"def {target.name}(")
    return f"\n{header}\n" + textwrap.indent(body.strip("\n"), "    ") + "\n"


def _utf7_hidden(statement: str) -> str:
    """A comment in UTF-8; ``\\n<statement>`` in UTF-7 (base64 of UTF-16, no padding)."""
    import base64  # deferred: only this payload encodes

    raw = base64.b64encode(("\n" + statement + "\n").encode("utf-16-be")).decode().rstrip("=")
    return f"# note +{raw}-\n"


def _plain_ascii(text: str) -> str:
    """The solution made valid UTF-7 as well: no ``+`` (UTF-7's shift) and ASCII only."""
    text = re.sub(r"(\w+) \+= (f\"[^\n]*\")", lambda m: f'{m[1]} = f"{{{m[1]}}}" {m[2]}', text)
    text = text.replace("€", "EUR").replace("¥", "JPY")
    assert "+" not in text and text.isascii(), "the payload's visible part must stay UTF-7"
    return text


Payload = Callable[[Target], dict[str, str]]


def _module(target: Target, tail: str) -> dict[str, str]:
    return {target.path: target.solution(target.path) + target.legacy + tail}


PAYLOADS: dict[str, Payload] = {
    "def under if True": lambda t: {t.path: t.solution(t.path) + _under("if True:", t)},
    "def in a try": lambda t: {
        t.path: t.solution(t.path) + _under("try:", t) + "except ImportError:\n    pass\n"
    },
    "def in a for": lambda t: {t.path: t.solution(t.path) + _under("for _ in (0,):", t)},
    "def in a with": lambda t: {
        t.path: t.solution(t.path) + "\nimport contextlib\n"
        + _under("with contextlib.nullcontext():", t)
    },
    "assignment": lambda t: _module(t, f"\n{t.name} = _legacy\n"),
    "walrus": lambda t: _module(t, f"\n({t.name} := _legacy)\n"),
    "import as": lambda t: _module(t, f"\nfrom {t.module} import _legacy as {t.name}\n"),
    "class": lambda t: _module(t, f"""
class {t.name}:
    def __new__(cls, *args, **kwargs):
        return _legacy(*args, **kwargs)
"""),
    "global in a function": lambda t: _module(t, f"""
def _install():
    global {t.name}
    {t.name} = _legacy


_install()
"""),
    "globals()": lambda t: _module(t, f'\nglobals()["{t.name}"] = _legacy\n'),
    "setattr on the module": lambda t: _module(
        t, f'\nimport sys as _s\nsetattr(_s.modules[__name__], "{t.name}", _legacy)\n'
    ),
    "decorator": lambda t: {t.path: t.solution(t.path).replace(
        f"\ndef {t.name}(", f"\n{t.legacy}\n\n@(lambda f: _legacy)\ndef {t.name}(", 1
    )},
    "another module writes it": lambda t: {
        t.companion: t.solution(t.companion) + "\nimport time\n" + t.legacy + f"""

def install():
    import {t.module} as _m
    globals()["RetryError"] = getattr(_m, "RetryError", None)
    _m.{t.name} = _legacy
""",
        t.path: t.solution(t.path) + f"\nimport {t.companion[:-3].replace('/', '.')} as _c\n"
        + "_c.install()\n",
    },
    "code swapped": lambda t: _module(t, f"\n{t.name}.__code__ = _legacy.__code__\n"),
    "vars() from another module": lambda t: {
        t.companion: t.solution(t.companion) + "\nimport time\n" + t.legacy + f"""

def install():
    import {t.module} as _m
    globals()["RetryError"] = getattr(_m, "RetryError", None)
    vars(_m)["{t.name}"] = _legacy
""",
        t.path: t.solution(t.path) + f"\nimport {t.companion[:-3].replace('/', '.')} as _c\n"
        + "_c.install()\n",
    },
    "utf-7 hidden statement": lambda t: {
        t.path: "# -*- coding: utf-7 -*-\n" + _plain_ascii(t.solution(t.path)) + t.legacy
        + _utf7_hidden(f"{t.name} = _legacy")
    },
}


def _payload_tree(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "payload"
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(text.encode("utf-8"))
    return root


def _grade(task: Task, payload: Path, choice: SandboxChoice) -> dict[str, tuple[bool, str]]:
    assert task.solution is not None
    graded = grade_end_state(task, choice, overlays=[task.solution, payload])
    return {c.name: (c.passed, c.detail) for c in graded.verdict.checks}


def _check(target: Target, shape: str, tmp_path: Path, choice: SandboxChoice) -> None:
    task = load_task(ROOT / "tasks" / target.task)
    checks = _grade(task, _payload_tree(tmp_path, PAYLOADS[shape](target)), choice)
    structure = {n: v for n, v in checks.items() if " delegates to " in n}
    others = {n: v for n, v in checks.items() if n not in structure}
    assert structure, checks
    failing_others = {n: v for n, v in others.items() if not v[0]}
    assert not failing_others, f"the payload must keep every other grader passing: {failing_others}"
    passed, detail = next(v for n, v in structure.items() if f": {target.name} delegates" in n)
    assert not passed, f"{shape}: beaten ({detail})"
    assert detail, shape


def test_the_utf7_payload_is_what_python_runs() -> None:
    """The hidden statement is a comment to UTF-8 and code to the interpreter."""
    text = PAYLOADS["utf-7 hidden statement"](MONEY)[MONEY.path]
    data = text.encode("utf-8")
    hidden = f"{MONEY.name} = _legacy"
    assert hidden not in data.decode("utf-8")
    assert f"\n{hidden}\n" in data.decode("utf-7")
    compile(data, MONEY.path, "exec")  # the interpreter decodes it as UTF-7 and it compiles


@pytest.mark.parametrize("shape", sorted(PAYLOADS))
@pytest.mark.parametrize("target", [MONEY, RETRY], ids=["money", "retry"])
def test_a_rebinding_the_interpreter_runs_fails_the_structure_grader(
    target: Target, shape: str, tmp_path: Path
) -> None:
    _check(target, shape, tmp_path, SandboxChoice("local", grading=True))


@pytest.mark.docker
@pytest.mark.parametrize("shape", ["def under if True", "utf-7 hidden statement"])
@pytest.mark.parametrize("target", [MONEY, RETRY], ids=["money", "retry"])
def test_the_same_in_docker(target: Target, shape: str, tmp_path: Path, docker_image: str) -> None:
    _check(target, shape, tmp_path, SandboxChoice("docker", docker_image, grading=True))


def test_the_solutions_still_delegate(tmp_path: Path) -> None:
    for target in (MONEY, RETRY):
        task = load_task(ROOT / "tasks" / target.task)
        assert task.solution is not None
        graded = grade_end_state(task, SandboxChoice("local", grading=True),
                                 overlays=[task.solution])
        assert graded.verdict.passed, graded.verdict.reason
