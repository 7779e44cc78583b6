"""The hash seed a run chooses (issue 45 item 2): by default every sandbox command, the judge
and its child run under ``PYTHONHASHSEED=0`` (the task format's §4, endstate 0.3.0's
contract); a sandbox made under another seed gives every one of them that seed, and a warm
interpreter started under one seed never serves a run of another (its hash secret was fixed
when it started: a fork would carry seed 0's secret under a variable that says otherwise).

Each comparison is with a fresh interpreter started with the seed in its environment: what
``hash`` gives there is what the run must give.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from endstate_harness.graders import judged_tests
from endstate_harness.graders import tests_pass as runner_grader
from endstate_harness.graders.unittest_grader import build_command
from endstate_harness.sandbox import warm as sandbox_warm
from endstate_harness.sandbox.choice import SandboxChoice
from endstate_harness.sandbox.docker.container import IMAGE_ENV
from endstate_harness.sandbox.docker.pool import ContainerPool, PooledDockerSandbox
from endstate_harness.sandbox.warm import recognise_shell
from tests.conftest import require_walls

PROBE = "python3 -c 'import os; print(os.environ[\"PYTHONHASHSEED\"], hash(\"endstate\"))'"
OTHER = 1234567


def fresh_hash(seed: int) -> str:
    """``hash("endstate")`` in a fresh interpreter under ``seed``."""
    env = {"PATH": os.environ["PATH"], "PYTHONHASHSEED": str(seed)}
    return subprocess.run([sys.executable, "-c", 'print(hash("endstate"))'], env=env,
                          capture_output=True, text=True, check=True).stdout.strip()


@pytest.fixture(params=["local", "local-no-walls", "docker"])
def choice(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> SandboxChoice:
    if request.param == "local":
        require_walls()
    if request.param == "local-no-walls":
        monkeypatch.setenv("ENDSTATE_WALLS", "0")
    if request.param == "docker":
        image = request.getfixturevalue("docker_image")
        monkeypatch.setenv(IMAGE_ENV, image)
        return SandboxChoice("docker", image)  # pooled containers: their own test below
    return SandboxChoice("local", grading=True)


def _probe(choice: SandboxChoice, fixture: Path) -> str:
    box = choice.make(fixture)
    with box:
        box.seal()
        result = box.run(PROBE, timeout_s=60)
    assert result.ok, result.output
    return result.stdout.strip()


def test_the_default_grading_runs_under_seed_0(choice: SandboxChoice, tmp_path: Path) -> None:
    fixture = tmp_path / "fixture"
    fixture.mkdir()
    assert _probe(choice, fixture) == f"0 {fresh_hash(0)}"


def test_another_seed_reaches_every_command_with_its_own_warm_interpreter(
    choice: SandboxChoice, tmp_path: Path
) -> None:
    """Under seed 0, then another, then 0 again, in one process: each run has its seed's
    variable and its seed's hash secret (a zygote warmed under one seed serves no other)."""
    fixture = tmp_path / "fixture"
    fixture.mkdir()
    other = choice.varied(OTHER)
    assert _probe(choice, fixture) == f"0 {fresh_hash(0)}"
    assert _probe(other, fixture) == f"{OTHER} {fresh_hash(OTHER)}"
    assert _probe(choice, fixture) == f"0 {fresh_hash(0)}"


def _zygotes_by_seed() -> dict[str, set[int]]:
    """The local sandbox's live zygotes, by the hash seed in their key's environment."""
    found: dict[str, set[int]] = {}
    for key, zygote in list(sandbox_warm._zygotes.items()):
        seed = dict(key[4]).get("PYTHONHASHSEED", "?")
        if zygote.alive():
            found.setdefault(seed, set()).add(zygote.proc.pid)
    return found


def test_warm_interpreters_of_two_seeds_are_two(tmp_path: Path) -> None:
    """The local sandbox's zygotes: the probe is recognised as a warm run, and the runs under
    each seed are forked from a zygote of that seed's own."""
    if not sandbox_warm.sandbox_warm_enabled():
        pytest.skip("the warm start is off here (ENDSTATE_WARM=0): no zygote to tell apart")
    fixture = tmp_path / "fixture"
    fixture.mkdir()
    base = SandboxChoice("local", grading=True)
    for seed in (0, OTHER):
        box = base.varied(seed).make(fixture)
        with box:
            box.seal()
            assert recognise_shell(PROBE, box.command_env()) is not None  # forked, not fresh
            assert box.run(PROBE, timeout_s=60).stdout.split() == [str(seed), fresh_hash(seed)]
    zygotes = _zygotes_by_seed()
    assert zygotes.get("0") and zygotes.get(str(OTHER)), zygotes
    assert not zygotes["0"] & zygotes[str(OTHER)]


@pytest.mark.docker
def test_a_pooled_container_serves_only_its_seed(docker_image: str, tmp_path: Path) -> None:
    """A container goes back to the pool with its runner, which forks every run with the
    environment it started with: one started under seed 0 must not serve another seed."""
    fixture = tmp_path / "fixture"
    fixture.mkdir()
    pool = ContainerPool(idle_s=30)
    try:
        for seed in (0, OTHER, 0):
            box = PooledDockerSandbox(fixture, image=docker_image, pull=False, pool=pool)
            box.hash_seed = str(seed)
            with box:
                box.seal()
                result = box.run(PROBE, timeout_s=60)
            assert result.stdout.split() == [str(seed), fresh_hash(seed)], result.output
        assert pool.created == 2  # one per seed; the third run took the first one's
    finally:
        pool.close()


def test_the_unittest_graders_command_carries_the_seed() -> None:
    for seed in ("0", str(OTHER)):
        command = build_command("k", start_dir="tests", pattern="test*.py", top_level_dir=".",
                                hash_seed=seed)
        assert f" PYTHONHASHSEED={seed} " in command
    assert " PYTHONHASHSEED=0 " in build_command("k", start_dir="tests", pattern="test*.py",
                                                  top_level_dir=".")


SEED_TASK_TEST = textwrap.dedent("""\
    import os
    import unittest

    from pkg import child_seed

    ORDER = []


    class SeedTest(unittest.TestCase):
        def test_a_judge_and_child_share_the_seed(self):
            ORDER.append("a")
            # the judge's own variable and hash secret, then the child's
            self.assertEqual(os.environ["PYTHONHASHSEED"], "{seed}")
            self.assertEqual(str(hash("endstate")), "{hashed}")
            self.assertEqual(child_seed(), ["{seed}", "{hashed}"])

        def test_b_order(self):
            ORDER.append("b")
            self.assertEqual(ORDER, {order})
    """)


@pytest.mark.parametrize("seed,order,expected", [
    (0, "", ["a", "b"]), (OTHER, "reversed", ["b"]),
])
def test_the_judge_and_its_child_run_under_the_sandboxs_seed_and_order(
    choice: SandboxChoice, tmp_path: Path, seed: int, order: str, expected: list[str]
) -> None:
    fixture = tmp_path / "fixture"
    (fixture / "pkg").mkdir(parents=True)
    (fixture / "pkg" / "__init__.py").write_text(
        "import os\n\n\ndef child_seed():\n"
        "    return [os.environ['PYTHONHASHSEED'], str(hash('endstate'))]\n")
    holdout = tmp_path / "holdout"
    (holdout / "tests").mkdir(parents=True)
    (holdout / "tests" / "__init__.py").write_text("")
    (holdout / "tests" / "test_seed.py").write_text(
        SEED_TASK_TEST.format(seed=seed, hashed=fresh_hash(seed), order=expected))
    box = (choice if (seed, order) == (0, "") else choice.varied(seed, order)).make(fixture)
    with box:
        box.seal()
        box.stage(holdout)
        verdict = judged_tests(box, visible=False, min_tests=2)
    assert verdict.passed, [c for c in verdict.checks if not c.passed]


RUNNER_TEST = textwrap.dedent("""\
    import os
    import unittest

    ORDER = []


    class SeedTest(unittest.TestCase):
        def test_a_seed(self):
            ORDER.append("a")
            self.assertEqual(os.environ["PYTHONHASHSEED"], "{seed}")
            self.assertEqual(str(hash("endstate")), "{hashed}")

        def test_b_order(self):
            ORDER.append("b")
            self.assertEqual(ORDER, {order})
    """)


@pytest.mark.parametrize("seed,order,expected", [
    (0, "", ["a", "b"]), (OTHER, "reversed", ["b"]),
])
def test_the_in_sandbox_runner_runs_under_the_sandboxs_seed_and_order(
    tmp_path: Path, seed: int, order: str, expected: list[str]
) -> None:
    """``tests_pass`` (the runner in the sandbox) under the sandbox's seed and order."""
    fixture = tmp_path / "fixture"
    fixture.mkdir()
    holdout = tmp_path / "holdout"
    (holdout / "tests").mkdir(parents=True)
    (holdout / "tests" / "__init__.py").write_text("")
    (holdout / "tests" / "test_seed.py").write_text(
        RUNNER_TEST.format(seed=seed, hashed=fresh_hash(seed), order=expected))
    choice = SandboxChoice("local", grading=True)
    box = (choice if (seed, order) == (0, "") else choice.varied(seed, order)).make(fixture)
    with box:
        box.seal()
        box.stage(holdout)
        verdict = runner_grader(box, start_dir="tests", min_tests=2)
    assert verdict.passed, [c for c in verdict.checks if not c.passed]
