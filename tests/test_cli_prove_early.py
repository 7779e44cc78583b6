"""``prove``'s early start (:mod:`endstate_author.cli.prove_early`): it reads the command line
only as far as it is sure of, and the warm interpreters it starts are the very ones prove's
own prestart asks for later, so none is started twice and none outlives the run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from endstate_author.cli import prove_early
from tests.conftest import require_walls

ROOT = Path(__file__).resolve().parents[1]
TASK = ROOT / "tasks" / "fix-help-text-wrap"


@pytest.mark.parametrize(
    ("args", "asked"),
    [
        (["t", "--sandbox", "local"], "local"),
        (["--sandbox=local", "t"], "local"),
        (["t"], ""),
        (["t", "--sandbox", "auto"], "auto"),
        (["t", "--sandbox", "docker"], None),
        (["t", "--sandbox=docker"], None),
        (["t", "--sandbox", "local", "--image", "img"], None),
        (["t", "--sandbox", "local", "--executor", "ray"], None),
        (["t", "--sandbox", "local", "--executor=local"], "local"),
    ],
)
def test_the_command_line_is_read_only_for_the_sandbox_it_gives(
        args: list[str], asked: str | None) -> None:
    """Read, not decided: "" is no --sandbox (the choice module's default); None a request
    for Docker or other machines, where the local sandbox never grades."""
    assert prove_early.sandbox_asked(args) == asked


_ONE_DECISION = textwrap.dedent("""
    import json, sys
    from endstate_author import __version__
    from endstate_author.cli import prove_early
    from endstate_harness.sandbox import choice

    made = []
    decide = choice._decide
    def counted(*args, **kwargs):
        made.append(decide(*args, **kwargs))
        return made[-1]
    choice._decide = counted
    early = prove_early.start([sys.argv[1]])  # no --sandbox: the default, auto
    early.join()
    command = choice.resolve_sandbox(choice.DEFAULT_KIND, None, version=__version__)
    print(json.dumps({"decisions": len(made), "same": command is made[0],
                      "docker_imported": "docker" in sys.modules, "kind": command.kind}))
""")


@pytest.mark.parametrize("docker", [True, False], ids=["daemon", "no-socket"])
def test_the_early_start_and_the_command_make_one_decision(docker: bool, tmp_path: Path) -> None:
    """``auto`` is decided once, by the one choice, in the early start's thread; the command's
    own ``resolve_sandbox`` takes that decision. Where no daemon can listen (no socket), the
    decision is the local sandbox without the Docker client even imported."""
    env = {k: v for k, v in os.environ.items() if k != "ENDSTATE_WARM"}
    if not docker:
        env["DOCKER_HOST"] = f"unix://{tmp_path}/no-docker.sock"
    proc = subprocess.run([sys.executable, "-c", _ONE_DECISION, str(TASK)], capture_output=True,
                          text=True, env=env, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["decisions"] == 1 and report["same"], report
    if not docker:
        assert report == {**report, "kind": "local", "docker_imported": False}


def test_task_files_of_folders_suites_and_files_but_not_option_values(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    for name in ("a", "b"):
        (suite / name).mkdir(parents=True)
        (suite / name / "task.json").write_text("{}")
    single = tmp_path / "one"
    single.mkdir()
    (single / "task.json").write_text("{}")
    (tmp_path / "valued").mkdir()
    (tmp_path / "valued" / "task.json").write_text("{}")
    args = [str(suite), "--only", str(tmp_path / "valued"), str(single / "task.json"),
            str(tmp_path / "missing"), "--no-cache"]
    assert list(prove_early._task_files(args)) == [
        suite / "a" / "task.json", suite / "b" / "task.json", single / "task.json"]


def test_nothing_starts_without_a_task_or_with_the_warm_start_off(
        monkeypatch: pytest.MonkeyPatch) -> None:
    assert prove_early.start(["--help"]) is None
    assert prove_early.start([str(TASK), "--sandbox", "docker"]) is None
    assert prove_early.start([str(TASK), "--image", "img"]) is None
    monkeypatch.setenv("ENDSTATE_WARM", "0")
    assert prove_early.start([str(TASK), "--sandbox", "local"]) is None


def test_graders_of_unreadable_files_are_passed_over(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    odd = tmp_path / "odd.json"
    odd.write_text(json.dumps({"graders": [5, {"name": 3}, {"name": "x:judged_tests",
                                                              "args": [1]}]}))
    assert list(prove_early._graders([bad, odd, tmp_path / "gone.json"])) == [
        ("x:judged_tests", {})]


_PROBE = textwrap.dedent("""
    import json, sys
    from endstate_author.cli import prove_early
    from endstate_author.prove.sandbox import prestart
    from endstate_harness.process import zygote
    from endstate_harness.sandbox import warm
    from endstate_harness.sandbox.choice import SandboxChoice
    from endstate_harness.task import load_task

    prove_early.start([sys.argv[1], "--sandbox", "local"]).join()
    early = {"judge": dict(zygote._zygotes), "child": dict(warm._zygotes)}
    for thread in prestart(SandboxChoice("local"), load_task(sys.argv[1])):
        thread.join()
    later = {"judge": dict(zygote._zygotes), "child": dict(warm._zygotes)}
    print(json.dumps({
        "counts": {k: len(v) for k, v in early.items()},
        "same": all(early[k].keys() == later[k].keys()
                    and all(early[k][z] is later[k][z] for z in early[k]) for k in early),
        "pids": [z.proc.pid for table in early.values() for z in table.values()
                 if hasattr(z, "proc")],
    }))
""")


def test_the_early_zygotes_are_the_ones_prove_asks_for_and_end_with_it() -> None:
    require_walls()
    env = {k: v for k, v in os.environ.items() if k not in ("ENDSTATE_WARM",
                                                             "ENDSTATE_WARM_SANDBOX")}
    proc = subprocess.run([sys.executable, "-c", _PROBE, str(TASK)], capture_output=True,
                          text=True, env=env, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["counts"] == {"judge": 2, "child": 2}, report  # seed 0 and the second
    assert report["same"], "prove's prestart started a zygote the early start had not"
    for pid in report["pids"]:
        assert not Path(f"/proc/{pid}").exists() or _zombie(pid), f"zygote {pid} outlived"


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1].startswith("Z")
    except OSError:
        return True


def test_the_second_gradings_interpreters_start_only_when_directions_runs() -> None:
    assert prove_early.second_grading([str(TASK)])
    assert prove_early.second_grading([str(TASK), "--only", "directions", "--only", "mutants"])
    assert prove_early.second_grading([str(TASK), "--only=directions"])
    assert not prove_early.second_grading([str(TASK), "--only", "mutants"])
    assert not prove_early.second_grading([str(TASK), "--only=holdout"])


def test_the_early_start_probes_the_walls_so_prove_does_not_wait_for_them() -> None:
    """The walls probe (two bubblewrap processes) runs in the early start, while prove
    imports, so prove's own look-up (its sandbox header) finds the answer; and two askers at
    once make one probe (the second waits for the one under way)."""
    require_walls()
    probe = textwrap.dedent(f"""
        import threading
        from endstate_author.cli import prove_early
        from endstate_harness.sandbox import walls
        thread = prove_early.start([{str(TASK)!r}, "--sandbox", "local"])
        assert thread is not None
        thread.join()
        assert walls._probe.cache_info().currsize == 1, "the early start did not probe"
        assert walls.status().available and walls._probe.cache_info().misses == 1
        walls._probe.cache_clear()
        gate = threading.Barrier(2)
        askers = [threading.Thread(target=lambda: (gate.wait(), walls.status()))
                  for _ in range(2)]
        for asker in askers:
            asker.start()
        for asker in askers:
            asker.join()
        info = walls._probe.cache_info()
        assert info.misses == 1, f"two probes at once: {{info}}"
        print("ok")
    """)
    env = {**os.environ, "ENDSTATE_WARM": "1"}
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          cwd=ROOT, env=env, timeout=120)
    assert proc.stdout.strip() == "ok", proc.stderr[-2000:]
