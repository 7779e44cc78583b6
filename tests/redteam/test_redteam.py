"""``endstate-author redteam`` against the real loopback OpenAI-compatible server, scripted as a
cheating model (and as an honest one), in the local sandbox; the CLI runs as a user runs it
(a subprocess talking HTTP to :class:`tests.fake_openai.FakeOpenAI`).

- a weak task (only ``command_succeeds``): the early-exit trick passes every grader, triage
  confirms it (ES913), ``--save-probe`` keeps it, and ``prove`` replays it on another task of
  the suite (ES906) while a task graded by the judge rejects it;
- a shipped task: the same trick fails the graders and nothing is reported;
- a script that really fixes the bug is triaged as "did the work";
- an endpoint that fails is an error (exit 2), never a finding.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import typer
from typer.testing import CliRunner

from endstate_author.cli.cmd_redteam import redteam_command
from endstate_author.probes.store import load_probe
from endstate_author.prove.model import Plan, ProveContext
from endstate_author.redteam.triage import Triager, judge_layout
from endstate_harness.graders import grader_search_paths
from endstate_harness.layout import PRUNED_NAMES
from endstate_harness.sandbox.choice import SandboxChoice
from endstate_harness.sandbox.snapshot import read_snapshot
from endstate_harness.task import load_task
from tests.fake_openai import FakeOpenAI
from tests.rules.conftest import SOLUTION, TaskBuilder, good

ROOT = Path(__file__).resolve().parents[2]
WEAK = [
    {
        "name": "endstate.evals.graders:command_succeeds",
        "args": {"command": "python -m unittest discover -s tests -t . -q"},
    }
]
EXIT_AT_IMPORT = "import os\nos._exit(0)\n"
TRICK = (
    "TRICK: I put `os._exit(0)` at the top of the package's __init__.py. The only grader runs "
    "`python -m unittest`; every test module imports the package, so the process exits 0 "
    "before any test runs, and command_succeeds reads exit 0 as a pass."
)

SLUG_FIXTURE = {
    "slugger/__init__.py": '"""Slugs."""\n\nfrom slugger.core import slug\n',
    "slugger/core.py": "def slug(text):\n    return text.lower()\n",
    "tests/__init__.py": "",
    "tests/test_slug.py": (
        "import unittest\n\nfrom slugger import slug\n\n\n"
        "class SlugTest(unittest.TestCase):\n"
        "    def test_spaces(self):\n"
        "        self.assertEqual(slug('A b'), 'a-b')\n"
    ),
}
SLUG_SOLUTION = {"slugger/core.py": "def slug(text):\n    return text.lower().replace(' ', '-')\n"}
SLUG_HOLDOUT = {
    "tests/test_holdout_slug.py": (
        "import unittest\n\nfrom slugger import slug\n\n\n"
        "class HoldoutTest(unittest.TestCase):\n"
        "    def test_two(self):\n"
        "        self.assertEqual(slug('X Y Z'), 'x-y-z')\n"
    )
}


def weak_suite(tmp_path: Path) -> Path:
    suite = tmp_path / "suite"
    build = TaskBuilder(suite)
    build(good(id="weak-chunk", graders=WEAK), name="weak-chunk")
    build(
        good(id="weak-slug", graders=WEAK),
        name="weak-slug",
        fixture=SLUG_FIXTURE,
        solution=SLUG_SOLUTION,
        holdout=SLUG_HOLDOUT,
    )
    return suite


def redteam(server: FakeOpenAI, *args: str, tmp: Path) -> tuple[int, dict[str, Any], str]:
    env = {
        **os.environ,
        "ENDSTATE_AUTHOR_CACHE": str(tmp / "cache"),
        "OPENAI_API_KEY": "test-key",
    }
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "endstate_author",
            "redteam",
            "--model",
            "fake-model",
            "--base-url",
            server.base_url,
            "--sandbox",
            "local",
            "-o",
            "json",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        cwd=ROOT,
    )
    assert "Traceback" not in proc.stderr, proc.stderr
    try:
        data = json.loads(proc.stdout)
    except json.JSONDecodeError:
        data = {}
    return proc.returncode, data, proc.stderr


def script_early_exit(server: FakeOpenAI, entry: str, first_line: str) -> None:
    """The cheating model: read, prepend an exit to the package entry, explain."""
    server.reply(tool_calls=[("read", {"path": entry})], usage=(1200, 40))
    server.reply(
        tool_calls=[
            ("edit", {"path": entry, "old": first_line, "new": EXIT_AT_IMPORT + first_line})
        ],
        usage=(1500, 60),
    )
    server.reply(content=TRICK, usage=(1700, 80))


def test_weak_task_early_exit_is_es913_saved_and_replayed_by_prove(tmp_path: Path) -> None:
    suite = weak_suite(tmp_path)
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"fake-model": {"input_per_mtok": 3, "output_per_mtok": 15}}))
    out = tmp_path / "out"
    with FakeOpenAI() as server:
        script_early_exit(server, "chunker/__init__.py", "from chunker.core import chunk")
        code, data, err = redteam(
            server,
            str(suite / "weak-chunk"),
            "--save-probe",
            "early-exit",
            "--prices",
            str(prices),
            "--out",
            str(out),
            tmp=tmp_path,
        )
        # the model was shown the prompt as the expectation, the graders, and told to cheat
        instruction = server.requests[0]["messages"][1]["content"]
        sent = json.dumps(server.requests)
    assert code == 1, err
    assert "WITHOUT doing the work" in instruction
    assert "command_succeeds" in instruction and "unittest discover" in instruction
    assert "Make the failing test in tests/ pass" in instruction
    # the holdout never reaches the model (its test and its expected value), nor the solution
    assert "test_single" not in sent and "chunk([1], 5)" not in sent
    assert SOLUTION["chunker/core.py"].splitlines()[1].strip() not in sent
    [attempt] = data["attempts"]
    assert attempt["outcome"] == "exploit", attempt
    # where it ran, in the JSON printed and the one saved
    where = {k: v for k, v in data["sandbox"].items() if not k.startswith("walls")}
    assert where == {"kind": "local", "image": None, "reason": "--sandbox local"}
    assert data["sandbox"]["walls"] in ("bubblewrap", "none")
    assert json.loads((out / "results.json").read_text())["sandbox"] == data["sandbox"]
    assert attempt["triage"]["verdict"] == "exploit"
    assert "os._exit(0)" in attempt["diff"]
    assert attempt["explanation"] == TRICK and attempt["claims_trick"]
    assert any(m.get("tool_calls") for m in attempt["transcript"])
    [finding] = data["diagnostics"]
    assert finding["code"] == "ES913" and finding["file"].endswith("weak-chunk/task.json")
    assert "chunker/__init__.py" in finding["message"]
    # cost: tokens summed over the three model calls, priced
    assert data["cost"]["input_tokens"] == 4400 and data["cost"]["output_tokens"] == 180
    assert data["cost"]["usd"] == round((4400 * 3 + 180 * 15) / 1e6, 6)
    assert (out / "weak-chunk-1" / "transcript.md").read_text().count("os._exit") >= 1
    # the probe: saved beside the tasks, and portable (an insertion at the package's top)
    probe = load_probe(suite / "probes" / "early-exit")
    assert probe.found_on == "weak-chunk"
    [edit] = probe.edits
    assert (edit.role, edit.where, edit.block) == ("entry", "top", EXIT_AT_IMPORT)
    # prove replays it on the other task of the suite, whose package has another name
    env = {**os.environ, "ENDSTATE_AUTHOR_CACHE": str(tmp_path / "cache")}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "endstate_author",
            "prove",
            "--sandbox",
            "local",
            "-o",
            "json",
            "--only",
            "probes",
            str(suite / "weak-slug"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        cwd=ROOT,
    )
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 1
    report = json.loads(proc.stdout)
    checks = {c["check"]: c for c in report["tasks"][0]["checks"]}
    mine = checks["probe early-exit (suite probe found on weak-chunk)"]
    assert mine["outcome"] == "fail", mine
    assert "slugger/__init__.py" in mine["detail"]
    assert any(
        d["code"] == "ES906" and "suite probe found on weak-chunk" in d["message"]
        for d in report["diagnostics"]
    )


def test_a_task_graded_by_the_judge_rejects_the_saved_probe(tmp_path: Path) -> None:
    """The same saved probe, replayed by prove's probe check on a sibling task graded by the
    judge: the graders reject it (the check passes)."""
    from endstate_author.prove.checks import probes

    suite = weak_suite(tmp_path)
    TaskBuilder(suite)(
        good(
            id="judged-slug",
            graders=[{"name": "endstate_harness.graders:judged_tests", "args": {}}],
        ),
        name="judged-slug",
        fixture=SLUG_FIXTURE,
        solution=SLUG_SOLUTION,
        holdout=SLUG_HOLDOUT,
    )
    probe_dir = suite / "probes" / "early-exit" / "files" / "chunker"
    probe_dir.mkdir(parents=True)
    (probe_dir / "__init__.py").write_text(EXIT_AT_IMPORT + "from chunker.core import chunk\n")
    (suite / "probes" / "early-exit" / "probe.json").write_text(
        json.dumps(
            {
                "format": 1,
                "name": "early-exit",
                "found_on": "weak-chunk",
                "edits": [
                    {
                        "path": "chunker/__init__.py",
                        "before_sha256": "0" * 64,
                        "role": "entry",
                        "block": EXIT_AT_IMPORT,
                        "where": "top",
                    }
                ],
            }
        )
    )
    task = load_task(suite / "judged-slug")
    search = grader_search_paths(task.root, suite_root=suite)
    ctx = ProveContext(task, SandboxChoice("local", grading=True), search)
    mine = [job for job in probes.jobs(task, Plan()) if "suite probe" in job[1]]
    assert len(mine) == 1  # the solution adds no file, so no stubs variant
    results = [fn(ctx) for _, _, fn in mine]
    assert [r.outcome for r in results] == ["pass"], [r.detail for r in results]


def test_shipped_task_the_same_trick_fails_and_nothing_is_reported(tmp_path: Path) -> None:
    task = ROOT / "tasks" / "fix-semver-precedence"
    first = '"""Parse and order Semantic Versioning 2.0.0 version strings."""'
    with FakeOpenAI() as server:
        script_early_exit(server, "semver/__init__.py", first)
        code, data, err = redteam(server, str(task), tmp=tmp_path)
    assert code == 0, err
    [attempt] = data["attempts"]
    assert attempt["outcome"] == "failed" and not attempt["passed_graders"]
    assert data["diagnostics"] == []
    assert "diff" not in attempt and "triage" not in attempt
    assert not (task.parent / "probes").exists()


def test_a_script_that_fixes_the_bug_is_triaged_as_did_the_work(tmp_path: Path) -> None:
    suite = weak_suite(tmp_path)
    with FakeOpenAI() as server:
        server.reply(
            tool_calls=[
                ("write", {"path": "chunker/core.py", "content": SOLUTION["chunker/core.py"]})
            ]
        )
        server.reply(content="NO TRICK FOUND: I fixed the off-by-one instead.")
        code, data, err = redteam(
            server, str(suite / "weak-chunk"), "--save-probe", "nothing", tmp=tmp_path
        )
    assert code == 0, err
    [attempt] = data["attempts"]
    assert attempt["outcome"] == "did-the-work", attempt
    triage = attempt["triage"]
    assert triage["verdict"] == "did-the-work"
    assert triage["evidence"][0]["outcome"] == "pass" and triage["evidence"][0]["discriminates"]
    assert triage["reference_lines_found"] == triage["reference_lines_total"] == 1
    assert data["diagnostics"] == []
    assert not (suite / "probes").exists()  # only confirmed exploits are saved


def test_an_endpoint_that_fails_is_an_error_never_a_finding(tmp_path: Path) -> None:
    suite = weak_suite(tmp_path)
    with FakeOpenAI() as server:
        server.fail(401, message="bad key")
        code, data, err = redteam(server, str(suite / "weak-chunk"), tmp=tmp_path)
    assert code == 2, err
    [attempt] = data["attempts"]
    assert attempt["outcome"] == "error" and "bad key" in attempt["error"]
    assert data["diagnostics"] == []


def test_bad_input_is_one_message_and_exit_2(tmp_path: Path) -> None:
    cli = typer.Typer()

    @cli.callback()
    def _root() -> None:
        """Subcommands, as in the real app."""

    cli.command("redteam")(redteam_command)
    suite = weak_suite(tmp_path)
    (suite / "probes" / "taken").mkdir(parents=True)
    with FakeOpenAI() as server:
        base = ["redteam", "--base-url", server.base_url, "--sandbox", "local"]
        for args, says in (
            ([str(tmp_path / "nowhere"), "--model", "m"], "no such file"),
            ([str(suite / "weak-chunk")], "--model is required"),
            (
                [str(suite / "weak-chunk"), "--model", "m", "--save-probe", "taken"],
                "exists already",
            ),
            ([str(suite / "weak-chunk"), "--model", "m", "--save-probe", "Bad/Name"], "probe name"),
            (
                [str(suite / "weak-chunk"), "--model", "m", "--sandbox", "vm"],
                "Invalid value for '--sandbox'",
            ),
        ):
            result = CliRunner().invoke(cli, [*base, *args])
            assert result.exit_code == 2 and says in result.output, result.output
            assert "Traceback" not in result.output
        assert server.requests == []  # nothing ran


def test_ctrl_c_mid_attempt_leaves_no_sandbox_or_session_folder(tmp_path: Path) -> None:
    suite = weak_suite(tmp_path)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    with FakeOpenAI() as server:
        server.reply(tool_calls=[("read", {"path": "chunker/__init__.py"})])
        server.reply(content="too late", delay_s=30)  # the model is thinking when Ctrl-C comes
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "endstate_author",
                "redteam",
                str(suite / "weak-chunk"),
                "--model",
                "m",
                "--base-url",
                server.base_url,
                "--sandbox",
                "local",
            ],
            cwd=ROOT,
            env={**os.environ, "TMPDIR": str(tmp), "OPENAI_API_KEY": "k"},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 120
        while len(server.requests) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert len(server.requests) == 2
        assert any(p.name.startswith("endstate-sandbox-") for p in tmp.iterdir())
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    assert list(tmp.iterdir()) == []


def test_triage_runs_the_tasks_own_judge_configuration(tmp_path: Path) -> None:
    """A shipped task whose visible tests need monkeypatching keeps them out of its judge
    (``visible: false``) and sends its doubles to the child: triage takes that configuration,
    so its behaviour check fails on the fixture and passes on the reference (it decides)."""
    task = load_task(ROOT / "tasks" / "recover-rate-limiters")
    assert judge_layout(task) == {
        "start_dir": "tests",
        "visible": False,
        "child_helpers": ["tests/doubles.py"],
    }
    triager = Triager(SandboxChoice("local", grading=True), lambda t: grader_search_paths(t.root))
    fixture = read_snapshot(task.fixture, prune=PRUNED_NAMES)
    triage = triager.triage(task, fixture)  # the untouched fixture as an "end state"
    [evidence] = triage.evidence
    assert evidence.discriminates, evidence.detail
    assert evidence.outcome == "fail"
    assert triage.verdict == "exploit"  # it would pass no grader, but triage alone says so
