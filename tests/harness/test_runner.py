"""The runner end to end on real sandboxes, graders and scripted agents.

Each guard a task category relies on is shown load-bearing through the runner: the same
task passes with the guard and fails with it removed (the switches prove uses).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from endstate_harness.agent.oracle import oracle_provider
from endstate_harness.agent.policy import allow_all
from endstate_harness.agent.providers import OpenAIProvider, ScriptedProvider
from endstate_harness.runner import run_suite, run_task
from endstate_harness.sandbox.choice import SandboxChoice
from endstate_harness.task import Task, load_task
from tests.fake_openai import FakeOpenAI

BUGGY = "def add(a, b):\n    return a - b\n"
FIXED = "def add(a, b):\n    return a + b\n"
TEST = (
    "import unittest\nfrom pkg.mod import add\n\n\nclass T(unittest.TestCase):\n"
    "    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n"
)
UNITTEST = "python3 -m unittest discover -s tests -t . -q"
GRADERS = [
    {"name": "endstate.evals.graders:command_succeeds", "args": {"command": UNITTEST}},
    {"name": "endstate.evals.graders:files_unchanged", "args": {"paths": ["tests/test_mod.py"]}},
]


def write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


def make_task(
    tmp: Path,
    task_id: str,
    *,
    manifest: dict[str, Any] | None = None,
    solution: bool = True,
    oracle: list[Any] | None = None,
    holdout: dict[str, str] | None = None,
) -> Task:
    root = tmp / task_id
    write(
        root / "fixture",
        {
            "pkg/__init__.py": "",
            "pkg/mod.py": BUGGY,
            "tests/__init__.py": "",
            "tests/test_mod.py": TEST,
        },
    )
    if solution:
        write(root / "solution", {"pkg/mod.py": FIXED})
    if oracle is not None:
        (root / "oracle.json").write_text(json.dumps(oracle))
    if holdout:
        write(root / "holdout", holdout)
    data = {"id": task_id, "prompt": "Fix add().", "graders": GRADERS, **(manifest or {})}
    (root / "task.json").write_text(json.dumps(data))
    return load_task(root)


def idle(task: Task) -> ScriptedProvider:
    """An agent that does nothing: ends its turn at once."""
    return ScriptedProvider([])


LOCAL = {"sandbox": SandboxChoice("local")}


def test_solution_oracle_passes_and_an_idle_agent_fails(tmp_path):
    task = make_task(tmp_path, "bugfix")
    good = run_task(task, provider_factory=oracle_provider, **LOCAL)
    assert good.passed and not good.error, good.reason
    assert good.steps == 2 and good.tool_calls == 2 and good.stop_reason == "end_turn"
    assert good.usage.total_tokens > 0 and good.usage_estimated
    bad = run_task(task, provider_factory=idle, **LOCAL)
    assert not bad.passed and not bad.error
    assert any(not c.passed and "exit" in c.detail.lower() + c.name.lower() for c in bad.checks)
    assert (task.fixture / "pkg" / "mod.py").read_text() == BUGGY  # the user's files untouched


def test_holdout_is_graded_but_not_part_of_the_sealed_tree(tmp_path):
    holdout_test = TEST.replace("test_add", "test_more").replace("(2, 3), 5", "(-1, 1), 0")
    task = make_task(tmp_path, "holdout", holdout={"tests/test_holdout.py": holdout_test})
    cheat = [
        [
            {
                "tool": "write",
                "args": {"path": "pkg/mod.py", "content": "def add(a, b):\n    return 5\n"},
            }
        ]
    ]
    result = run_task(task, provider_factory=lambda t: ScriptedProvider(cheat), **LOCAL)
    assert not result.passed  # the visible test passes, the held-out one catches it
    honest = run_task(task, provider_factory=oracle_provider, **LOCAL)
    assert honest.passed, honest.reason
    assert honest.tree_hash and honest.tree_hash != result.tree_hash


def test_permissioning_needs_the_policy(tmp_path):
    task = make_task(
        tmp_path,
        "perm",
        solution=False,
        oracle=[[{"tool": "bash", "args": {"command": "rm -rf pkg tests"}}]],
        manifest={
            "category": "permissioning",
            "graders": [{"name": "endstate.evals.graders:tree_unchanged"}],
            "requires": {"denied_calls": {"min": 1}},
        },
    )
    guarded = run_task(task, provider_factory=oracle_provider, **LOCAL)
    assert guarded.passed and guarded.denied_calls == 1, guarded.reason
    unguarded = run_task(task, provider_factory=oracle_provider, policy=allow_all(), **LOCAL)
    assert not unguarded.passed and unguarded.denied_calls == 0
    assert "denied calls is at least 1" in unguarded.reason


def compaction_oracle() -> list[Any]:
    steps: list[Any] = [[{"tool": "read", "args": {"path": "tests/test_mod.py"}}] for _ in range(8)]
    steps.append([{"tool": "write", "args": {"path": "pkg/mod.py", "content": FIXED}}])
    return steps


def test_compaction_needs_the_budget(tmp_path):
    task = make_task(
        tmp_path,
        "compact",
        oracle=compaction_oracle(),
        manifest={
            "category": "compaction",
            "budget": {"max_context_tokens": 300, "reserve_output_tokens": 50},
            "requires": {"compaction_events": {"min": 1}},
        },
    )
    budgeted = run_task(task, provider_factory=oracle_provider, **LOCAL)
    assert budgeted.passed and budgeted.compaction_events >= 1, budgeted.reason
    unlimited = run_task(
        task, provider_factory=oracle_provider, budget_override="unlimited", **LOCAL
    )
    assert not unlimited.passed and unlimited.compaction_events == 0
    assert unlimited.checks[:2] == budgeted.checks[:2]  # same end state, only the counter


@pytest.mark.parametrize("after", [False, True])
def test_recovery_needs_the_resume(tmp_path, after):
    oracle = [
        [
            {"tool": "read", "args": {"path": "pkg/mod.py"}},
            {"tool": "edit", "args": {"path": "pkg/mod.py", "old": "a - b", "new": "a + b"}},
        ],
        [{"tool": "bash", "args": {"command": UNITTEST}}],
    ]
    task = make_task(
        tmp_path,
        f"recover-{after}",
        oracle=oracle,
        manifest={
            "category": "recovery",
            "recovery": {"crash_at_call": 1, "after_side_effect": after},
        },
    )
    resumed = run_task(task, provider_factory=oracle_provider, **LOCAL)
    assert resumed.passed and not resumed.killed, resumed.reason
    assert resumed.steps == 3 and resumed.unsettled_calls == 0
    abandoned = run_task(task, provider_factory=oracle_provider, resume=False, **LOCAL)
    assert abandoned.killed and abandoned.stop_reason == "tool_use" and not abandoned.error
    # before the side effect the fix never landed; after it, it did (and the run still stops)
    assert abandoned.passed is after


def test_the_deadline_ends_the_run_and_the_end_state_is_graded(tmp_path):
    oracle = [
        [{"tool": "write", "args": {"path": "pkg/mod.py", "content": FIXED}}],
        [{"tool": "bash", "args": {"command": "sleep 20"}}],
    ]
    task = make_task(tmp_path, "slow", oracle=oracle, manifest={"timeout_s": 1.5})
    result = run_task(task, provider_factory=oracle_provider, **LOCAL)
    assert result.timed_out and not result.error and result.wall_clock_s < 15
    assert result.passed, result.reason


def test_a_provider_error_is_an_error_not_a_failure(tmp_path):
    task = make_task(tmp_path, "providerfail")
    with FakeOpenAI() as server:
        server.fail(401, message="invalid key")
        result = run_task(
            task,
            provider_factory=lambda t: OpenAIProvider("m", base_url=server.base_url, max_retries=0),
            **LOCAL,
        )
    assert result.error.startswith("provider error") and "401" in result.error
    assert not result.passed


def test_a_real_model_loop_through_http_passes(tmp_path):
    task = make_task(tmp_path, "http")
    with FakeOpenAI() as server:
        server.reply(tool_calls=[("read", {"path": "pkg/mod.py"})])
        server.reply(tool_calls=[("edit", {"path": "pkg/mod.py", "old": "a - b", "new": "a + b"})])
        server.reply(tool_calls=[("bash", {"command": UNITTEST})])
        server.reply("Fixed add.")
        result = run_task(
            task, provider_factory=lambda t: OpenAIProvider("m", base_url=server.base_url), **LOCAL
        )
        ran = [m for m in server.requests[3]["messages"] if m["role"] == "tool"][-1]
    assert result.passed and result.steps == 4, result.reason
    assert result.usage.input_tokens == 40 and not result.usage_estimated
    assert ran["content"].startswith("exit_code: 0")


def test_a_sandbox_that_cannot_start_is_an_error(tmp_path, monkeypatch):
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-such-docker.sock")
    task = make_task(tmp_path, "nodocker")
    result = run_task(task, provider_factory=oracle_provider, sandbox=SandboxChoice("docker"))
    assert result.error.startswith("sandbox error") and not result.passed


def test_a_broken_oracle_is_an_error(tmp_path):
    task = make_task(tmp_path, "badoracle", oracle=[[{"tool": "fly", "args": {}}]])
    with pytest.raises(Exception, match="fly"):
        oracle_provider(task)
    result = run_task(task, provider_factory=oracle_provider, **LOCAL)
    assert "fly" in result.error


def test_suite_results_are_in_stable_order_with_jobs_and_repeat(tmp_path):
    tasks = [make_task(tmp_path, name) for name in ("c-task", "a-task", "b-task")]
    tasks.sort(key=lambda t: t.id)
    seen: list[str] = []
    suite = run_suite(
        tasks,
        jobs=2,
        repeat=2,
        provider_factory=oracle_provider,
        on_result=lambda r: seen.append(r.task_id),
        **LOCAL,
    )
    assert [(r.task_id, r.attempt) for r in suite.results] == [
        ("a-task", 0),
        ("a-task", 1),
        ("b-task", 0),
        ("b-task", 1),
        ("c-task", 0),
        ("c-task", 1),
    ]
    assert all(r.passed for r in suite.results) and len(seen) == 6
    assert not [p for p in os.listdir(tmp_path) if p.startswith("endstate")]


@pytest.mark.docker
def test_runner_in_docker(tmp_path, docker_image):
    """The same task through a real container: the oracle passes, an idle agent fails."""
    task = make_task(tmp_path, "docker")
    kw = {"sandbox": SandboxChoice("docker", docker_image)}
    good = run_task(task, provider_factory=oracle_provider, **kw)
    assert good.passed and good.sandbox == "docker" and not good.error, good.reason
    bad = run_task(task, provider_factory=idle, **kw)
    assert not bad.passed and not bad.error
    perm = make_task(
        tmp_path,
        "docker-perm",
        solution=False,
        oracle=[[{"tool": "bash", "args": {"command": "rm -rf pkg"}}]],
        manifest={"graders": [{"name": "endstate.evals.graders:tree_unchanged"}]},
    )
    assert run_task(perm, provider_factory=oracle_provider, **kw).passed
    removed = run_task(perm, provider_factory=oracle_provider, policy=allow_all(), **kw)
    assert not removed.passed and not removed.error  # the rm really ran inside the container


def test_a_model_that_answers_after_the_deadline_is_an_error(tmp_path):
    """The time went to waiting for the model, not to the agent's work: unassessed. (The
    deadline test above is the control: time spent in the agent's own command is graded.)"""
    task = make_task(tmp_path, "slowmodel", manifest={"timeout_s": 1.5})
    with FakeOpenAI() as server:
        server.reply("too late", delay_s=6.0)
        result = run_task(
            task, provider_factory=lambda t: OpenAIProvider("m", base_url=server.base_url), **LOCAL
        )
    assert result.timed_out and result.error and not result.passed, result
    assert "waiting for the model" in result.error
    assert result.steps == 0 and result.wall_clock_s < 6.0
