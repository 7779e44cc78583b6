"""The warm runner inside the local sandbox (``endstate_harness.sandbox.warm``): recognised
runs give what a fresh process gives, timeouts still kill the whole group, and nothing one run
does reaches the next.

Every comparison runs the same command twice in the same kind of sandbox, once forked from the
zygote and once with ``ENDSTATE_WARM=0`` (a fresh ``/bin/sh -c``). The differential over every
shipped task's every check is ``bench/warm.py``; two shipped tasks are proved both ways here.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from endstate_author.probes.catalogue import PROBES, injection_targets
from endstate_harness import graders
from endstate_harness.graders.unittest_grader import build_command
from endstate_harness.process import zygote as warm
from endstate_harness.sandbox import recognise, scratch
from endstate_harness.sandbox import warm as sandbox_warm
from endstate_harness.sandbox.base import COMMAND_ENV, ExecResult
from endstate_harness.sandbox.local import LocalSandbox
from tests.harness.grader_fixture import UNITTEST_COMMAND, make_task
from tests.support import procs

ROOT = Path(__file__).resolve().parents[2]
ENV = {"PATH": os.environ["PATH"], "HOME": "/nonexistent", **COMMAND_ENV}


@pytest.fixture
def task(tmp_path: Path) -> Path:
    return make_task(tmp_path / "task")


def _zygote_pids() -> set[int]:
    return {z.proc.pid for z in sandbox_warm._zygotes.values() if z.alive()}


def _run(fixture: Path, command: str, files: dict[str, str] | None = None,
         timeout_s: float = 60, walls: bool | None = None) -> ExecResult:
    with LocalSandbox(fixture, walls=walls) as box:
        for rel, text in (files or {}).items():
            box.write_text(rel, text)
        box.seal()
        result = box.run(command, timeout_s=timeout_s)
    # the scratch folder is new each run; unittest prints its own time
    out = re.sub(r"endstate-sandbox-\w+|in \d+\.\d+s", "X", result.stdout)
    err = re.sub(r"endstate-sandbox-\w+|in \d+\.\d+s", "X", result.stderr)
    return ExecResult(result.exit_code, out, err, timed_out=result.timed_out)


def _both_ways(monkeypatch: pytest.MonkeyPatch, *args: object, **kwargs: object) -> ExecResult:
    monkeypatch.delenv(warm.WARM_ENV, raising=False)
    warm_result = _run(*args, **kwargs)  # type: ignore[arg-type]
    monkeypatch.setenv(warm.WARM_ENV, "0")
    fresh = _run(*args, **kwargs)  # type: ignore[arg-type]
    monkeypatch.delenv(warm.WARM_ENV)
    assert warm_result == fresh
    return warm_result


def test_what_is_recognised_and_what_is_not() -> None:
    if not recognise._SH_IS_DASH:
        pytest.skip("/bin/sh is not dash here: shell commands always run fresh")
    judge_child = sandbox_warm.recognise_argv(["python3", "-s", "-S", "-B", "-c", "import json"],
                                              ENV)
    assert judge_child is not None and judge_child.preload() == ("json",)
    hardened = sandbox_warm.recognise_shell(build_command("k", start_dir="tests",
                                                          pattern="test*.py", top_level_dir="."),
                                            ENV)
    assert hardened is not None and "unittest" in hardened.preload()
    assert dict(hardened.env)["PYTHONSAFEPATH"] == "1" and "LC_ALL" in dict(hardened.env)
    for command in ("python -m unittest", "python3 -m pytest -q tests",
                    "python3.11 -m unittest discover -s tests -t ."):
        assert sandbox_warm.recognise_shell(command, ENV) is not None, command
    for command in (
        "python3 -m unittest; echo done",  # a list: the shell's business
        "python3 -m unittest > out.txt",
        "python3 -m unittest $ARGS",
        "PYTHONPATH=src python3 -m unittest",
        "cd sub && python3 -m unittest",
        "python3 -m http.server",  # only unittest and pytest
        "python3 -X dev -m unittest",
        "python3 -I -m unittest",  # -I and -E ignore PYTHONHASHSEED: a secret per process
        "./python3 -m unittest",
        "python3 tests/run.py",
        "'python3' -m unittest",  # quoting a plain word: not how shlex.quote writes it
    ):
        assert sandbox_warm.recognise_shell(command, ENV) is None, command
    no_seed = {k: v for k, v in ENV.items() if k != "PYTHONHASHSEED"}
    assert sandbox_warm.recognise_shell("python3 -m unittest", no_seed) is None


def test_the_fast_word_split_agrees_with_shlex_on_every_command() -> None:
    """Recognising reads a command's words with a regex (the hardened command carries a
    whole source in one word); it must agree with shlex on which commands are canonical
    (words exactly as shlex.quote writes them) and on their words."""
    import random

    def canonical(words: list[str] | None, command: str) -> list[str] | None:
        if words is None:
            return None
        rendered = []
        for word in words:
            m = recognise._KEPT.fullmatch(word)
            same = m is not None and m.group(1) == m.group(2) == m.group(3)
            rendered.append(f'${{{m.group(1)}+"{m.group(1)}=${m.group(1)}"}}' if m and same
                            else shlex.quote(word))
        return words if " ".join(rendered) == command else None

    rng = random.Random(7)
    alphabet = "abcAB'\" $-_{}+=/\\\n\t;|&#~*?"
    recognised = 0
    for _ in range(30000):
        words = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 6)))
                 for _ in range(rng.randint(1, 5))]
        if rng.random() < 0.3:
            words.insert(rng.randint(0, len(words)),
                         rng.choice(['${HOME+"HOME=$HOME"}', "${HOME+HOME=$HOME}"]))
        command = rng.choice([" ", " ", "  "]).join(
            shlex.quote(w) if rng.random() < 0.8 else w for w in words)
        if not command.strip():
            continue  # no words: no run either way
        try:
            by_shlex = canonical(shlex.split(command), command)
        except ValueError:
            by_shlex = None
        by_regex = canonical(recognise._canonical_words(command), command)
        assert by_regex == by_shlex, repr(command)
        recognised += by_shlex is not None
    assert recognised > 5000, "the corpus must hold canonical commands too"


PROGRAMS = {
    "argv, folder, path, env, main": (
        "import os, sys; print(sys.argv, os.getcwd().endswith('/live'), repr(sys.path[0]), "
        "sorted(os.environ), sorted(globals()), __name__, sys.stdin.read()); sys.exit(3)"
    ),
    "uncaught exception": "def f():\n    raise ValueError('boom')\nf()",
    "exit with a message": "import sys; sys.exit('bye')",
    "atexit and a thread": (
        "import atexit, threading, time\natexit.register(print, 'at exit')\n"
        "threading.Thread(target=lambda: (time.sleep(0.2), print('thread'))).start()"
    ),
    "killed by a signal": "import os; print('x', flush=True); os.kill(os.getpid(), 9)",
    "os._exit skips atexit": "import atexit, os; atexit.register(print, 'no'); os._exit(7)",
    "hash seed and random": "import random; print(hash('abc'), random.random() != 0.5)",
    "a compile-time warning": "x = 1\nprint(x is 1)",
    "a syntax error": "print('a'\nx = ",
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_a_warm_run_is_a_fresh_run(
    name: str, task: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    command = f"python3 -s -S -B -c {shlex.quote(PROGRAMS[name])}"
    _both_ways(monkeypatch, task / "fixture", command)
    assert _zygote_pids(), "the warm runner was not used"


def test_python_m_unittest_both_ways_solved_and_not(
    task: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    broken = _both_ways(monkeypatch, task / "fixture", UNITTEST_COMMAND)
    assert broken.exit_code == 1 and "FAILED" in broken.stderr
    solved = _both_ways(monkeypatch, task / "fixture", UNITTEST_COMMAND,
                        {"pkg/mod.py": (task / "solution/pkg/mod.py").read_text()})
    assert solved.exit_code == 0, solved.stderr


def test_a_tree_that_shadows_a_preloaded_module_runs_fresh(
    task: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fresh ``python -m unittest`` imports the tree's ``unittest.py``, and so must the warm
    runner's run: such a tree is never forked from the zygote that holds the real one."""
    shadow = {"unittest.py": "import sys\nprint('shadowed')\nsys.exit(0)\n"}
    result = _both_ways(monkeypatch, task / "fixture", UNITTEST_COMMAND, shadow)
    assert (result.exit_code, result.stdout.strip()) == (0, "shadowed")
    json_shadow = {"json.py": "X = 'tree json'\n"}
    command = "python3 -s -S -B -c " + shlex.quote("import json; print(json.X)")
    assert _both_ways(monkeypatch, task / "fixture", command, json_shadow).stdout == "tree json\n"


def test_a_timeout_still_kills_the_whole_group(task: Path, walls: bool) -> None:
    mark = procs.token()  # the run and its child carry it as their name, seen from the host
    program = (f"import os, time\nopen('/proc/self/comm', 'w').write({mark!r})\n"
               "if os.fork() == 0:\n    time.sleep(60)\nprint('up', flush=True)\ntime.sleep(60)")
    with LocalSandbox(task / "fixture", walls=walls) as box:
        result = box.run("python3 -s -S -B -c " + shlex.quote(program), timeout_s=1)
    assert result.timed_out and result.stdout == "up\n"
    assert _zygote_pids(), "the warm runner was not used"
    assert procs.gone(mark), "a process of the timed-out run outlived it"


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return ""


def _children_of(pid: int) -> Iterator[int]:
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if stat[2] == str(pid):  # same process group
                yield int(entry.name)


POISON = textwrap.dedent("""\
    import builtins, json, sys, unittest

    unittest.TestCase.assertEqual = lambda self, *a, **k: None
    unittest.TestCase.run = lambda self, result=None: None
    json.dumps = lambda *a, **k: '{}'
    builtins.len = lambda x: 0
    sys.modules['unittest'] = None


    def add(a, b):
        return a + b


    def clamp(x, lo, hi):
        return max(lo, min(x, hi - 1))
    """)


def _verdicts(task: Path, files: dict[str, str]) -> list[tuple[str, bool]]:
    out = []
    for grader in (graders.tests_pass, graders.judged_tests):
        with LocalSandbox(task / "fixture") as box:
            for rel, text in files.items():
                box.write_text(rel, text)
            box.seal()
            box.stage(task / "holdout")
            verdict = grader(box)
        out += [(c.name, c.passed) for c in verdict.checks]
    return out


def test_a_run_cannot_poison_the_next(task: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An end state that patches unittest, json, builtins and sys.modules at import is graded
    first; a sound end state graded next by the same zygotes gets its fresh-process result."""
    solution = {"pkg/mod.py": (task / "solution/pkg/mod.py").read_text()}
    poisoned = _verdicts(task, {"pkg/mod.py": POISON})
    assert not all(passed for _, passed in poisoned)
    zygotes = _zygote_pids()
    assert len(zygotes) >= 2, "both graders' runs were forked from zygotes"
    sound = _verdicts(task, solution)
    assert _zygote_pids() == zygotes, "the same zygotes served the sound end state"
    monkeypatch.setenv(warm.WARM_ENV, "0")
    assert sound == _verdicts(task, solution)
    assert all(passed for _, passed in sound), sound


def _probe_checks(task: Path) -> dict[str, list[tuple[str, bool]]]:
    out = {}
    for probe in PROBES:
        with LocalSandbox(task / "fixture") as box:
            assert probe.apply(box.live, injection_targets(task / "fixture"), "tests")
            box.seal()
            box.stage(task / "holdout")
            out[probe.id] = [(c.name, c.passed) for c in graders.tests_pass(box).checks]
    return out


def test_every_probe_gets_the_same_tests_pass_checks_warm_and_fresh(
    task: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Check by check, as a fresh runner gives them (``tests/harness/test_tests_pass.py``
    shows those reject every probe but the holdout-only ones, now with the warm runner on)."""
    warm_checks = _probe_checks(task)
    assert _zygote_pids()
    monkeypatch.setenv(warm.WARM_ENV, "0")
    assert _probe_checks(task) == warm_checks
    rejected = [p.id for p in PROBES if not all(ok for _, ok in warm_checks[p.id])]
    assert set(rejected) >= {p.id for p in PROBES if not p.holdout_only} - {"edit-tests"}


def test_off_means_no_zygote_and_a_dead_one_is_replaced(
    task: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sandbox_warm._REGISTRY.close()
    monkeypatch.setenv(warm.WARM_ENV, "0")
    _run(task / "fixture", UNITTEST_COMMAND)
    assert not sandbox_warm._zygotes
    monkeypatch.delenv(warm.WARM_ENV)
    first = _run(task / "fixture", UNITTEST_COMMAND)
    (pid,) = _zygote_pids()
    os.kill(pid, 9)
    next(iter(sandbox_warm._zygotes.values())).proc.wait()
    assert _run(task / "fixture", UNITTEST_COMMAND) == first
    assert _zygote_pids() not in (set(), {pid})


def test_a_run_that_stops_its_zygote_does_not_hang_the_next(
    task: Path, monkeypatch: pytest.MonkeyPatch, walls: bool
) -> None:
    """Without walls a run's parent is its zygote, which it can stop: the harness kills it and
    starts another. Behind the walls the run's parent is the first process of its own PID
    namespace, where a SIGSTOP from inside does not land, and the zygote is out of reach."""
    monkeypatch.setattr(sandbox_warm, "ANSWER_S", 1.0)
    sandbox_warm._REGISTRY.close()
    program = "import os, signal, sys\nif sys.argv[1:] == ['stop']:\n" \
        "    os.kill(os.getppid(), signal.SIGSTOP)\nprint('ok')"
    command = "python3 -s -S -B -c " + shlex.quote(program)
    started = time.monotonic()
    _run(task / "fixture", command + " stop", timeout_s=20, walls=walls)
    assert time.monotonic() - started < 15, "the harness waited on the stopped zygote"
    if walls:
        (pid,) = _zygote_pids()
        assert _state(pid) not in ("T", "t"), "a walled run stopped its zygote"
    else:
        assert not _zygote_pids(), "the stopped zygote was killed"
    assert _run(task / "fixture", command, timeout_s=20, walls=walls).stdout == "ok\n"
    assert _zygote_pids(), "a new zygote serves the next run"


def test_the_zygote_ends_with_the_harness(task: Path) -> None:
    script = textwrap.dedent(f"""\
        import sys
        from pathlib import Path
        sys.path.insert(0, {str(ROOT)!r})
        from tests.harness.test_sandbox_warm import _run, _zygote_pids
        _run(Path({str(task / "fixture")!r}), {UNITTEST_COMMAND!r})
        print(*_zygote_pids())
        """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    pid = int(proc.stdout.strip())
    for _ in range(100):
        if not Path(f"/proc/{pid}").exists():
            break
        subprocess.run(["sleep", "0.1"], check=True)
    assert not Path(f"/proc/{pid}").exists(), "the zygote outlived its harness"


def test_a_killed_harness_leaves_no_zygote_folder(task: Path) -> None:
    """SIGKILL gives the harness no chance to tidy up: the zygote, seeing its socket close,
    takes its own folder with it."""
    script = textwrap.dedent(f"""\
        import sys, time
        from pathlib import Path
        sys.path.insert(0, {str(ROOT)!r})
        from endstate_harness.sandbox import warm as sandbox_warm
        from tests.harness.test_sandbox_warm import _run
        _run(Path({str(task / "fixture")!r}), {UNITTEST_COMMAND!r})
        z = next(iter(sandbox_warm._zygotes.values()))
        print(z.proc.pid, z.folder, flush=True)
        time.sleep(300)
        """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                            cwd=ROOT)
    assert proc.stdout is not None
    pid_text, folder = proc.stdout.readline().split()
    assert Path(folder).is_dir()
    proc.kill()
    proc.wait()
    for _ in range(100):
        if not Path(folder).exists() and not Path(f"/proc/{pid_text}").exists():
            break
        subprocess.run(["sleep", "0.1"], check=True)
    assert not Path(f"/proc/{pid_text}").exists(), "the zygote outlived its killed harness"
    assert not Path(folder).exists(), "the zygote's folder outlived its killed harness"


def test_folders_of_zygotes_killed_with_their_harness_are_removed(
    task: Path, tmp_path: Path
) -> None:
    """A zygote killed together with its harness (Ray kills a worker's whole tree) cannot remove
    its folder; the next zygote made beside it does, and never one whose harness lives."""
    dead = subprocess.Popen(["true"])
    dead.wait()
    orphan = tmp_path / f"endstate-zygote-{dead.pid}-abc"
    (orphan / "home").mkdir(parents=True)
    living = tmp_path / f"endstate-zygote-{os.getppid()}-abc"
    living.mkdir()
    with LocalSandbox(task / "fixture", scratch_root=tmp_path) as box:
        box.seal()
        box.run(UNITTEST_COMMAND, timeout_s=60)
    assert not orphan.exists(), "the orphaned zygote folder is still there"
    assert living.exists(), "a living harness's zygote folder was removed"


SHIPPED = {
    # a judged_tests task and one that also has tests_pass: every check group but the probes
    # (the probes are above, check by check, and in tests/harness/test_warm.py)
    "fix-help-text-wrap": ["--mutants", "3", "--only", "directions", "--only", "holdout",
                           "--only", "defects", "--only", "visible", "--only", "mutants"],
    "refactor-money-formatting": ["--only", "directions", "--only", "holdout", "--only",
                                  "defects", "--only", "visible", "--only", "oracle"],
}


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_shipped_task_checks_both_ways(name: str, tmp_path: Path) -> None:
    """The same outcomes warm and fresh (``bench/warm.py`` does this for every check of every
    shipped task)."""
    outcomes = []
    details: list[dict[str, str]] = []
    for flag in ("1", "0"):
        env = {**os.environ, warm.WARM_ENV: flag, "ENDSTATE_AUTHOR_CACHE": str(tmp_path)}
        proc = subprocess.run(
            [str(Path(sys.executable).parent / "endstate-author"), "prove",
             str(ROOT / "tasks" / name), "--sandbox", "local", "--no-cache", "-o", "json",
             *SHIPPED[name]],
            env=env, capture_output=True, text=True, timeout=300,
        )
        assert proc.stdout.strip(), f"exit {proc.returncode}, warm={flag}: {proc.stderr[-3000:]}"
        report = json.loads(proc.stdout)
        outcomes.append([(c["check"], c["outcome"]) for t in report["tasks"]
                         for c in t["checks"]])
        details.append({c["check"]: c["detail"] for t in report["tasks"] for c in t["checks"]})
    differ = {check: (details[0][check], details[1].get(check)) for check, outcome in outcomes[0]
              if dict(outcomes[1]).get(check) != outcome}
    assert outcomes[0] == outcomes[1], differ
    # mutants a --mutants bound leaves unrun, and the visible check of a refactor task (exempt),
    # are skipped; nothing fails and nothing is unassessed
    passed = [c for c, o in outcomes[0] if o == "pass"]
    assert len(passed) >= 5 and all(o in ("pass", "skipped") for _, o in outcomes[0]), outcomes[0]


def test_docker_runs_stay_in_the_container(
    task: Path, docker_image: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Docker sandbox has no warm runner yet: a recognised command must still run in the
    container (its interpreter, its file system), never be forked from a host-side zygote, and
    grade the same with the warm switches on and off."""
    from endstate_harness.sandbox.docker.container import DockerSandbox  # only where Docker answers

    def graded() -> tuple[str, list[tuple[str, bool]]]:
        with DockerSandbox(task / "fixture", image=docker_image, pull=False) as box:
            box.stage(task / "solution")
            box.seal()
            where = box.run("python3 -s -S -B -c " + shlex.quote(
                "import os, sys; print(sys.executable, os.getcwd())")).stdout
            box.stage(task / "holdout")
            checks = [(c.name, c.passed) for c in graders.tests_pass(box).checks]
        return where, checks

    sandbox_warm._REGISTRY.close()
    warm_where, warm_checks = graded()
    assert not sandbox_warm._zygotes, "a Docker run was forked on the host"
    assert warm_where.split()[1] == "/work" and warm_where.split()[0] != sys.executable
    monkeypatch.setenv(warm.WARM_ENV, "0")
    assert graded() == (warm_where, warm_checks)
    assert all(passed for _, passed in warm_checks), warm_checks


def test_grading_trees_go_to_memory_unless_told_otherwise(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("TMPDIR", raising=False)
    monkeypatch.delenv(scratch.SCRATCH_ENV, raising=False)
    expected = scratch.MEMORY_DIR if os.access(scratch.MEMORY_DIR, os.W_OK) else None
    assert scratch.grading_scratch_root() in (expected, None)
    monkeypatch.setattr(scratch, "MIN_FREE_BYTES", 1 << 62)  # a tmpfs too small to use
    assert scratch.grading_scratch_root() is None
    monkeypatch.setenv("TMPDIR", str(tmp_path))  # an explicit TMPDIR wins
    assert scratch.grading_scratch_root() is None
    monkeypatch.setenv(scratch.SCRATCH_ENV, str(tmp_path / "s"))
    assert scratch.grading_scratch_root() == tmp_path / "s"
    monkeypatch.setenv(scratch.SCRATCH_ENV, "disk")
    assert scratch.grading_scratch_root() is None
