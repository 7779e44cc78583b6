"""One rule for "the environment failed, not the task": eval's error and prove's ES908 agree.

The classifier (:mod:`endstate_harness.graders.environment`) is shown on its own (with a probe that
answers from a set), then through the runner (eval: a result with ``error``) and through
prove's grading (``Unassessed``) on real local sandboxes, including the end states that must
stay *failures*: a forged "not found" from the agent's code, a deleted script, a missing
program the agent's own code calls.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from endstate_author.prove.grading import grade_end_state
from endstate_author.prove.model import Unassessed
from endstate_harness.agent.oracle import oracle_provider, task_oracle_steps
from endstate_harness.agent.providers import ScriptedProvider
from endstate_harness.graders import grade
from endstate_harness.graders.environment import (
    command_programs,
    environment_failure,
    exec_environment_failure,
    programs_of,
)
from endstate_harness.runner import run_task
from endstate_harness.sandbox.base import ExecResult
from endstate_harness.sandbox.choice import SandboxChoice
from endstate_harness.task import GraderSpec, Task
from endstate_harness.verdict import Check, Verdict
from tests.harness.test_runner import make_task

MISSING = "endstate-no-such-tool"
LOCAL = {"sandbox": SandboxChoice("local")}


def spec(name: str = "endstate.evals.graders:command_succeeds", **args: Any) -> GraderSpec:
    return GraderSpec(name=name, args=args)


def probe_with(*present: str):  # type: ignore[no-untyped-def]
    asked: list[str] = []

    def probe(program: str) -> str:
        asked.append(program)
        return "present" if program in present else "absent"

    probe.asked = asked  # type: ignore[attr-defined]
    return probe


def failed(detail: str, name: str = "`x` exits 0") -> Verdict:
    return Verdict.from_checks([Check(name=name, passed=False, detail=detail)])


# ----- the rule on its own --------------------------------------------------------------------


def test_programs_a_grader_runs() -> None:
    assert command_programs("python -m unittest discover -s tests -t . -q") == ["python"]
    assert command_programs("cd pkg && FOO=1 env python3 -m x 2>&1 | tee out; pytest -q") == [
        "cd",
        "python3",
        "tee",
        "pytest",
    ]
    assert command_programs("if python -c 1; then true; fi") == ["python", "true"]
    assert command_programs("./run_tests.sh") == []  # a file of the tree, never the image's
    assert command_programs("scripts/check --all") == []
    specs = [
        spec(command="python -m unittest"),
        spec("endstate_harness.graders:tests_pass"),
        spec("endstate_harness.graders:judged_tests", python="python3.12"),
        spec("endstate_harness.graders:tests_pass", python="/opt/py/bin/python"),
    ]
    assert programs_of(specs) == ["python", "python3", "python3.12"]


@pytest.mark.parametrize(
    "detail",
    [
        "exit 127\n/bin/sh: 1: python: not found",  # dash
        "exit 127\nbash: line 1: python: command not found",  # bash
        "exit 127\nsh: python: not found",  # busybox
        "the judge failed: FileNotFoundError: [Errno 2] No such file or directory: 'python'",
        "exit 127\nenv: 'python': No such file or directory",
    ],
)
def test_a_missing_interpreter_the_task_runs_is_the_environments(detail: str) -> None:
    probe = probe_with("sh", "python3")
    why = environment_failure(failed(detail), specs=[spec(command="python -m t")], probe=probe)
    assert why is not None and "`python` is not installed in the sandbox" in why


def test_words_never_decide_only_the_probe_of_a_program_of_the_task() -> None:
    specs = [spec(command="python3 -m unittest")]
    forged = failed("exit 127\n/bin/sh: 1: python3: not found")
    assert environment_failure(forged, specs=specs, probe=probe_with("python3")) is None
    # the agent's code called a tool the image lacks: its failure, not the environment's
    own = failed("exit 1\nsh: 1: frobnicate: not found\nFAILED (errors=1)")
    assert environment_failure(own, specs=specs, probe=probe_with("python3")) is None
    # a script of the tree that the agent deleted: the path is never a program of the image
    script = failed("exit 127\n/bin/sh: 1: ./run_tests.sh: not found")
    assert (
        environment_failure(script, specs=[spec(command="./run_tests.sh")], probe=probe_with())
        is None
    )
    # no probe, no trust
    real = failed("exit 127\n/bin/sh: 1: python3: not found")
    assert environment_failure(real, specs=specs, probe=None) is None
    # a pass is never an error
    assert environment_failure(Verdict.ok(), specs=specs, probe=probe_with()) is None
    # the program absent: the environment's whatever the words say (none at all here)
    silent = failed("exit 1")
    assert "`python3` is not installed" in (
        environment_failure(silent, specs=specs, probe=probe_with()) or ""
    )


def test_a_query_of_a_program_is_not_a_run_of_it() -> None:
    assert command_programs("command -v ruff >/dev/null && ruff check .; pytest -q") == [
        "ruff",
        "pytest",
    ]
    assert command_programs("command -V black || true") == ["true"]


def test_a_grader_that_cannot_load_is_the_environments(tmp_path: Path) -> None:
    """Typed where the resolver fails: the verdict carries the fault, not a marker."""
    name = "no_such_suite_graders_xyz:check"
    (tmp_path / "fixture").mkdir()
    box = SandboxChoice("local", grading=True).make(tmp_path / "fixture")
    try:
        box.setup()
        box.start()
        box.seal()
        verdict = grade([spec(name)], box)
    finally:
        box.close()
    assert not verdict.passed and verdict.environment is not None
    why = environment_failure(verdict, specs=[spec(name)], probe=None)
    assert why is not None and "could not be loaded" in why and "no_such_suite_graders_xyz" in why
    # it survives conjunction with other verdicts, in either order
    other = failed("exit 1")
    assert environment_failure(other.merged_with(verdict), probe=None) == why
    assert environment_failure(verdict.merged_with(other), probe=None) == why


@pytest.mark.parametrize("name", ["suite_graders:check", "endstate.evals.graders:file_contains"])
def test_the_resolution_marker_in_a_reason_is_not_the_environments(name: str) -> None:
    """The reason quotes the end state (a link's target, a file's name): the words a
    resolution failure once was recognised by are anyone's to write."""
    forged = Verdict.fail(f"the end state cannot be graded: 'x' -> '/{name}: cannot resolve: y'")
    assert environment_failure(forged, specs=[spec(name)], probe=probe_with("sh")) is None
    plain = Verdict.fail(f"{name}: cannot resolve: cannot import 'suite_graders': boom")
    assert environment_failure(plain, specs=[spec(name)], probe=None) is None


def test_an_unrunnable_sandbox_is_the_environments() -> None:
    oci = "exit 126\nOCI runtime exec failed: exec failed: unable to start container process"

    def broken(program: str) -> str:
        return "broken"

    why = environment_failure(failed("exit 1"), specs=[spec(command="true")], probe=broken)
    assert why is not None and "cannot run commands" in why
    # Docker's words in the output, with a sandbox that runs commands: the task's failure
    assert (
        environment_failure(failed(oci), specs=[spec(command="true")], probe=probe_with("true"))
        is None
    )


def test_one_command_and_its_exec_result() -> None:
    missing = ExecResult(127, "", "/bin/sh: 1: python: not found")
    assert exec_environment_failure("python -m x", missing, probe_with()) is not None
    assert exec_environment_failure("python -m x", missing, probe_with("python")) is None
    assert (
        exec_environment_failure("python -m x", ExecResult(1, "", missing.stderr), probe_with())
        is None
    )


# ----- through the runner (eval) and prove's grading, on the local sandbox --------------------


def _graded(task: Task) -> str:
    """What prove's grading says of the solution: 'unassessed: …', 'fail' or 'pass'."""
    try:
        graded = grade_end_state(
            task, SandboxChoice("local", grading=True), overlays=[task.solution]  # type: ignore[list-item]
        )
    except Unassessed as exc:
        return f"unassessed: {exc}"
    return "pass" if graded.verdict.passed else "fail"


def _task(tmp_path: Path, task_id: str, command: str, **kw: Any) -> Task:
    graders = [{"name": "endstate.evals.graders:command_succeeds", "args": {"command": command}}]
    return make_task(tmp_path, task_id, manifest={"graders": graders}, **kw)


def test_a_program_missing_from_the_sandbox_is_an_error_in_eval_and_unassessed_in_prove(
    tmp_path: Path,
) -> None:
    task = _task(tmp_path, "missing", f"{MISSING} --check")
    result = run_task(task, provider_factory=oracle_provider, **LOCAL)
    assert not result.passed and result.error, result
    assert f"`{MISSING}` is not installed" in result.error
    assert _graded(task).startswith(f"unassessed: `{MISSING}` is not installed")


def test_a_grader_that_cannot_import_is_an_error_in_eval_and_unassessed_in_prove(
    tmp_path: Path,
) -> None:
    task = make_task(tmp_path, "noimport", manifest={"graders": [{"name": "no_such_mod_xyz:g"}]})
    result = run_task(task, provider_factory=oracle_provider, **LOCAL)
    assert result.error and "could not be loaded" in result.error, result
    assert "could not be loaded" in _graded(task)


def test_a_forged_not_found_from_the_agents_code_is_a_failure(tmp_path: Path) -> None:
    """The code under test prints the shell's message and exits 127; python3 is there."""
    forged = (
        "import os, sys\n"
        "sys.stderr.write('/bin/sh: 1: python3: not found\\n'); sys.stderr.flush()\n"
        "os._exit(127)\n"
    )
    task = make_task(tmp_path, "forged")
    (task.solution / "pkg" / "mod.py").write_text(forged)  # type: ignore[operator]
    result = run_task(task, provider_factory=oracle_provider, **LOCAL)
    assert not result.passed and not result.error, result
    assert any("python3: not found" in c.detail for c in result.checks)
    assert _graded(task) == "fail"


def test_a_script_the_agent_deleted_is_a_failure(tmp_path: Path) -> None:
    deleting = [[{"tool": "bash", "args": {"command": "rm run_tests.sh"}}]]
    task = _task(tmp_path, "script", "./run_tests.sh", oracle=deleting)
    script = task.fixture / "run_tests.sh"
    script.write_text("#!/bin/sh\nexec python3 -m unittest discover -s tests -t . -q\n")
    script.chmod(0o755)
    steps = task_oracle_steps(task)
    result = run_task(task, provider_factory=lambda t: ScriptedProvider(steps), **LOCAL)
    assert not result.passed and not result.error, result
    assert any("not found" in c.detail for c in result.checks), result.checks


MARKED = "endstate.evals.graders:command_succeeds"


def _marked_link_task(tmp_path: Path) -> Task:
    """A task whose solution fails its grader, and an agent that also leaves a dangling link
    out of the tree named with the words a resolution failure was once recognised by: the
    seal quotes the link's target in the reason."""
    target = f"/nowhere/{MARKED}: cannot resolve: forged"
    linking = [[{"tool": "bash", "args": {"command": f"ln -s '{target}' pkg/notes"}}]]
    return _task(tmp_path, "marked", "python3 -m unittest discover -s tests -t . -q",
                 oracle=linking, solution=False)


def test_a_link_named_with_the_resolution_marker_leaves_a_failure_a_failure_in_eval(
    tmp_path: Path,
) -> None:
    task = _marked_link_task(tmp_path)
    steps = task_oracle_steps(task)
    result = run_task(task, provider_factory=lambda t: ScriptedProvider(steps), **LOCAL)
    assert f"{MARKED}: cannot resolve: " in result.reason, result  # the words are there
    assert not result.passed and not result.error, result


@pytest.mark.docker
def test_the_same_in_docker(tmp_path: Path, docker_image: str) -> None:
    task = _marked_link_task(tmp_path)
    steps = task_oracle_steps(task)
    result = run_task(task, provider_factory=lambda t: ScriptedProvider(steps),
                      sandbox=SandboxChoice("docker", docker_image))
    assert f"{MARKED}: cannot resolve: " in result.reason, result
    assert not result.passed and not result.error, result


def test_a_link_named_with_the_resolution_marker_leaves_a_failure_a_failure_in_prove(
    tmp_path: Path,
) -> None:
    task = _marked_link_task(tmp_path)
    target = f"/nowhere/{MARKED}: cannot resolve: forged"

    def link(live: Path) -> list[str]:
        (live / "pkg" / "notes").symlink_to(target)
        return ["pkg/notes"]

    try:
        graded = grade_end_state(task, SandboxChoice("local", grading=True), mutate=link)
    except Unassessed as exc:
        raise AssertionError(f"a failure turned unassessed: {exc}") from exc
    assert f"{MARKED}: cannot resolve: " in graded.verdict.reason
    assert not graded.verdict.passed


def test_a_definite_answer_is_shared_by_sandboxes_of_one_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every failing verdict is probed, so the answer is kept per environment: the second
    sandbox of the same PATH and walls asks nothing again (the real probe, counted)."""
    import endstate_harness.graders.environment as environment

    asked: list[str] = []
    real = environment._ask

    def counted(sandbox: Any, program: str, timeout_s: float) -> Any:
        asked.append(program)
        return real(sandbox, program, timeout_s)

    monkeypatch.setattr(environment, "_ask", counted)
    monkeypatch.setattr(environment, "_KNOWN", {})
    (tmp_path / "fixture").mkdir()
    answers = []
    for _ in range(2):
        box = SandboxChoice("local", grading=True).make(tmp_path / "fixture")
        try:
            box.setup()
            box.start()
            probe = environment.program_probe(box)
            answers.append((probe("sh"), probe(MISSING)))
        finally:
            box.close()
    assert answers == [("present", "absent")] * 2
    assert asked == ["sh", MISSING]


def test_gradings_that_need_the_answer_at_once_share_one_probe(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """prove's first gradings fail together by design (the fixture's, the defects'), each on
    a sandbox of its own: the probe (a fresh process behind fresh walls) runs once, and the
    gradings that wanted it meanwhile wait for its answer (the real probe, counted; a barrier
    makes the two threads ask together)."""
    import threading

    import endstate_harness.graders.environment as environment

    asked: list[str] = []
    real = environment._ask

    def counted(sandbox: Any, program: str, timeout_s: float) -> Any:
        asked.append(program)
        return real(sandbox, program, timeout_s)

    monkeypatch.setattr(environment, "_ask", counted)
    monkeypatch.setattr(environment, "_KNOWN", {})
    (tmp_path / "fixture").mkdir()
    boxes = [SandboxChoice("local", grading=True).make(tmp_path / "fixture") for _ in range(3)]
    together = threading.Barrier(len(boxes))
    answers: list[str] = []

    def grading(box: Any) -> None:
        probe = environment.program_probe(box)
        together.wait()
        answers.append(probe("sh"))

    try:
        for box in boxes:
            box.setup()
            box.start()
        threads = [threading.Thread(target=grading, args=(box,)) for box in boxes]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
    finally:
        for box in boxes:
            box.close()
    assert answers == ["present"] * len(boxes)
    assert asked == ["sh"]


def test_a_program_that_started_warm_there_is_present_without_a_probe(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The judge's child (``python3``) forks from a warm interpreter of the sandbox's
    environment; once that started, a failing grading's probe of ``python3`` reads it rather
    than starting a process to ask (counted: none asked). A PATH of the test's own (an extra
    folder of its own at the end) keys both, so nothing another test started is read."""
    import endstate_harness.graders.environment as environment
    from endstate_harness.graders.judge.launch import child_command
    from endstate_harness.sandbox import warm
    from endstate_harness.sandbox.local import LocalSandbox

    if not warm.sandbox_warm_enabled():
        pytest.skip("the warm start is turned off here (ENDSTATE_WARM=0)")
    asked: list[str] = []
    real = environment._ask

    def counted(sandbox: Any, program: str, timeout_s: float) -> Any:
        asked.append(program)
        return real(sandbox, program, timeout_s)

    monkeypatch.setattr(environment, "_ask", counted)
    monkeypatch.setattr(environment, "_KNOWN", {})
    own = tmp_path / "bin"
    own.mkdir()
    path = f"{os.environ['PATH']}{os.pathsep}{own}"
    (tmp_path / "fixture").mkdir()
    answers = []
    for _ in range(2):
        box = LocalSandbox(tmp_path / "fixture", path_env=path)
        try:
            box.setup()
            box.start()
            box.seal()
            channel = box.open_channel(child_command("python3"), timeout_s=30)
            warm_child = isinstance(channel.proc, warm.WarmRun)  # type: ignore[attr-defined]
            channel.close()
            answers.append((warm_child, environment.program_probe(box)("python3")))
        finally:
            box.close()
    assert answers == [(True, "present")] * 2
    assert asked == []
