"""``eval``, ``run`` and ``sessions`` as a user runs them, plus the report numbers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

from typer.testing import CliRunner

from endstate_author.cli_eval import app
from endstate_author.evalreport.results import (
    load_prices,
    percentile,
    results_json,
    summarise_suite,
)
from endstate_harness.agent.messages import Usage
from endstate_harness.runner import SuiteResult, TaskResult
from tests.fake_openai import FakeOpenAI
from tests.harness.test_runner import FIXED, make_task

runner = CliRunner()


def suite_dir(tmp_path: Path) -> Path:
    suite = tmp_path / "suite"
    make_task(suite, "fix-add")
    make_task(
        suite,
        "perm",
        solution=False,
        oracle=[[{"tool": "bash", "args": {"command": "rm -rf pkg"}}]],
        manifest={
            "category": "permissioning",
            "graders": [{"name": "endstate.evals.graders:tree_unchanged"}],
            "requires": {"denied_calls": {"min": 1}},
        },
    )
    return suite


def test_eval_oracle_local_writes_report_and_results(tmp_path, monkeypatch, walls):
    """With walls and without: the same verdicts, and without walls the header says so and
    every verdict is marked "no walls" in results.json and the report."""
    monkeypatch.setenv("ENDSTATE_WALLS", "1" if walls else "0")
    suite = suite_dir(tmp_path)
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"oracle": {"input_per_mtok": 3, "output_per_mtok": 15}}))
    out = tmp_path / "out"
    result = runner.invoke(
        app,
        [
            "eval",
            str(suite),
            "--provider",
            "oracle",
            "--sandbox",
            "local",
            "--out",
            str(out),
            "--prices",
            str(prices),
        ],
    )
    # the plain oracle writes solution/: it passes the bug fix and fails the permissioning
    # task, which measures a refusal, not files (exit 1: a failure, no error)
    assert result.exit_code == 1, result.output
    if walls:
        assert "sandbox: local (walled by bubblewrap)" in result.output
    else:
        assert "local (no walls: turned off (ENDSTATE_WALLS=0))" in result.output
        assert "no isolation" in result.output
    data = json.loads((out / "results.json").read_text())
    rows = data["results"]
    assert [r["walls"] for r in rows] == ["bubblewrap" if walls else "none"] * 2
    assert ("no walls" in data["walls"]) is not walls
    assert [r["task_id"] for r in rows] == ["fix-add", "perm"]
    for key in (
        "task_id",
        "category",
        "passed",
        "error",
        "steps",
        "usage",
        "compaction_events",
        "denied_calls",
        "unsettled_calls",
        "wall_clock_s",
        "checks",
    ):
        assert key in rows[0]
    assert rows[0]["passed"] and not rows[1]["passed"] and not rows[1]["error"]
    assert rows[1]["denied_calls"] == 0 and rows[1]["steps"] == 1
    assert data["summary"]["pass_rate"] == 0.5 and data["summary"]["cost_usd"] > 0
    report = (out / "report.md").read_text()
    assert "| permissioning | 0 | 1 | 0% |" in report
    assert ("| pass (no walls) |" in report and "| FAIL (no walls) |" in report) is not walls
    assert (out / "sessions.sqlite3").exists()


def test_eval_filters_and_unpriced_cost_is_unknown(tmp_path):
    suite = suite_dir(tmp_path)
    out = tmp_path / "o"
    result = runner.invoke(
        app,
        [
            "eval",
            str(suite),
            "--provider",
            "oracle",
            "--sandbox",
            "local",
            "--task",
            "perm",
            "--out",
            str(out),
            "--repeat",
            "2",
        ],
    )
    assert result.exit_code == 1, result.output
    data = json.loads((out / "results.json").read_text())
    assert [(r["task_id"], r["attempt"]) for r in data["results"]] == [("perm", 0), ("perm", 1)]
    assert data["summary"]["cost_usd"] is None and data["summary"]["unpriced_models"] == ["oracle"]
    assert data["summary"]["flake"]["perm"]["flake_rate"] == 0
    # the oracle calls no model: no cost column at all, never "$0" (issue 46 item 5)
    assert "USD/run" not in result.output and "$0" not in result.output


def test_eval_bad_input_is_a_message_and_exit_2(tmp_path):
    suite = suite_dir(tmp_path)
    bad_prices = tmp_path / "p.json"
    bad_prices.write_text('{"m": {"input": 1}}')
    cases = [
        ([str(tmp_path / "nope")], "no such suite"),
        ([str(suite), "--task", "ghost"], "ghost"),
        ([str(suite), "--category", "bugfix"], "unknown category"),
        ([str(suite), "--provider", "openai"], "--model"),
        ([str(suite), "--provider", "magic"], "--provider"),
        ([str(suite), "--sandbox", "vm"], "--sandbox"),
        ([str(suite), "--provider", "oracle", "--prices", str(bad_prices)], "input_per_mtok"),
        ([str(suite), "--provider", "scripted"], "--script"),
        ([str(suite), "--jobs", "0"], "at least 1"),
    ]
    for args, needle in cases:
        result = runner.invoke(app, ["eval", *args])
        assert result.exit_code == 2, (args, result.output)
        assert needle in result.output, (args, result.output)
        assert "Traceback" not in result.output


def test_eval_empty_or_unloadable_suite_blames_what_is_wrong(tmp_path):
    """An empty folder is "no task", never "no task matches the --task/--category filters"
    nobody gave; an emptied category names it; a task that does not load is lint's finding."""
    empty = tmp_path / "empty"
    empty.mkdir()
    result = runner.invoke(app, ["eval", str(empty), "--provider", "oracle"])
    assert result.exit_code == 2
    assert "no task under" in result.output and "filter" not in result.output, result.output
    suite = suite_dir(tmp_path)
    result = runner.invoke(app, ["eval", str(suite), "--provider", "oracle", "--category", "cost"])
    assert result.exit_code == 2 and "no task of category 'cost'" in result.output
    manifest = suite / "fix-add" / "task.json"
    manifest.write_text(manifest.read_text().replace('"graders"', '"gradrs"', 1))
    result = runner.invoke(app, ["eval", str(suite), "--provider", "oracle"])
    assert result.exit_code == 2, result.output
    flat = " ".join(result.output.split())
    assert "task.json:" in flat and "ES101 unknown key 'gradrs'" in flat, flat
    assert "Extra inputs" not in flat and "do not load; nothing was run" in flat


def test_eval_failure_exits_1(tmp_path):
    suite = tmp_path / "suite"
    make_task(suite, "t")
    script = tmp_path / "steps.json"
    script.write_text(json.dumps([[{"tool": "glob", "args": {"pattern": "*"}}]]))
    result = runner.invoke(
        app,
        [
            "eval",
            str(suite),
            "--provider",
            "scripted",
            "--script",
            str(script),
            "--sandbox",
            "local",
        ],
    )
    assert result.exit_code == 1 and "FAIL" in result.output


def test_run_works_in_the_folder_and_sessions_lists_it(tmp_path):
    work = tmp_path / "w"
    (work / "pkg").mkdir(parents=True)
    (work / "pkg" / "mod.py").write_text("def add(a, b):\n    return a - b\n")
    store = tmp_path / "s.sqlite3"
    with FakeOpenAI() as server:
        server.reply(tool_calls=[("edit", {"path": "pkg/mod.py", "old": "a - b", "new": "a + b"})])
        server.reply("Fixed it.")
        result = runner.invoke(
            app,
            [
                "run",
                "fix add",
                "--workdir",
                str(work),
                "--base-url",
                server.base_url,
                "--model",
                "m",
                "--store",
                str(store),
            ],
        )
    assert result.exit_code == 0, result.output
    assert "Fixed it." in result.output
    assert (work / "pkg" / "mod.py").read_text() == FIXED
    listed = runner.invoke(app, ["sessions", "--store", str(store), "--json"])
    rows = json.loads(listed.output)
    assert rows[0]["status"] == "end_turn" and rows[0]["workdir"] == str(work.resolve())
    bad = runner.invoke(
        app,
        [
            "run",
            "--resume",
            "nope",
            "--workdir",
            str(work),
            "--provider",
            "scripted",
            "--script",
            str(tmp_path / "missing.json"),
            "--store",
            str(store),
        ],
    )
    assert bad.exit_code == 2 and "Traceback" not in bad.output


def test_module_runs_standalone(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "endstate_author.cli_eval",
            "sessions",
            "--store",
            str(tmp_path / "none.sqlite3"),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert proc.returncode == 0 and "no sessions yet" in proc.stdout


def _r(task_id: str, passed: bool, *, error: str = "", attempt: int = 0, **kw) -> TaskResult:
    return TaskResult(
        task_id=task_id,
        category=kw.pop("category", "bug-fix"),
        passed=passed,
        error=error,
        attempt=attempt,
        model=kw.pop("model", "m"),
        **kw,
    )


def test_report_numbers():
    suite = SuiteResult(
        repeat=2,
        results=[
            _r(
                "a",
                True,
                steps=4,
                usage=Usage(input_tokens=1000, output_tokens=100),
                latencies_s=[0.1, 0.2, 0.3],
            ),
            _r(
                "a",
                False,
                attempt=1,
                steps=6,
                usage=Usage(input_tokens=2000, output_tokens=200),
                latencies_s=[0.4],
            ),
            _r("b", False, error="sandbox error: no docker", category="feature"),
            _r("b", False, error="sandbox error: no docker", attempt=1, category="feature"),
        ],
    )
    prices = {"m": (Decimal(3), Decimal(15))}
    s = summarise_suite(suite, prices)
    assert s["pass_rate"] == 0.5 and s["errors"] == 2 and s["assessed"] == 2
    assert "feature" not in s["pass_rate_by_category"]
    assert s["median_steps"] == 5
    assert s["cost_usd"] == float(Decimal("0.0135"))  # 3000*3/1e6 + 300*15/1e6
    assert s["latency_p50_s"] == 0.2 and s["latency_p95_s"] == 0.4
    assert s["flake"]["a"]["flaky"] and s["flake"]["a"]["flake_rate"] == 0.5
    assert s["flake"]["b"]["flake_rate"] is None
    assert summarise_suite(suite, {})["cost_usd"] is None
    assert results_json(suite, {})["results"][0]["cost_usd"] is None
    assert percentile([], 0.5) is None and percentile([5.0], 0.95) == 5.0


def test_prices_file_is_validated(tmp_path):
    path = tmp_path / "p.json"
    path.write_text(json.dumps({"m": {"input_per_mtok": 1.5, "output_per_mtok": 2}}))
    assert load_prices(path) == {"m": (Decimal("1.5"), Decimal("2"))}
    for bad in (
        "[]",
        '{"m": {"input_per_mtok": -1, "output_per_mtok": 2}}',
        '{"m": {"input_per_mtok": "x", "output_per_mtok": 2}}',
        "{not json",
    ):
        path.write_text(bad)
        try:
            load_prices(path)
        except ValueError as exc:
            assert str(path) in str(exc)
        else:
            raise AssertionError(f"accepted {bad}")


def test_ctrl_c_closes_the_sandbox_and_exits_130(tmp_path):
    import signal
    import time

    suite = tmp_path / "suite"
    make_task(suite, "slow")
    script = tmp_path / "steps.json"
    script.write_text(json.dumps([[{"tool": "bash", "args": {"command": "sleep 60"}}]]))
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = {
        **os.environ,
        "TMPDIR": str(scratch),
        "PYTHONPATH": str(Path(__file__).resolve().parents[2]),
    }
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "endstate_author.cli_eval",
            "eval",
            str(suite),
            "--provider",
            "scripted",
            "--script",
            str(script),
            "--sandbox",
            "local",
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not any(scratch.iterdir()):
        time.sleep(0.1)
    assert any(scratch.iterdir()), "the sandbox never started"
    time.sleep(1.0)  # let the agent reach its sleep
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "interrupted" in err
    assert list(scratch.iterdir()) == [], "a sandbox scratch folder was left behind"


def test_eval_without_a_docker_daemon_says_so_once(tmp_path, monkeypatch):
    """--sandbox docker with no daemon is one message and exit 2; the default (auto) runs in
    the local sandbox and says why in its header, as prove does."""
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/absent.sock")
    suite = suite_dir(tmp_path)
    asked = runner.invoke(app, ["eval", str(suite), "--provider", "oracle", "--sandbox", "docker"])
    assert asked.exit_code == 2 and "--sandbox local" in asked.output
    assert asked.output.count("no Docker daemon answers") == 1
    assert "Traceback" not in asked.output
    auto = runner.invoke(app, ["eval", str(suite), "--provider", "oracle"])
    assert "sandbox: local (walled by bubblewrap): no Docker daemon answers" in auto.output \
        or "sandbox: local (no walls: " in auto.output, auto.output
    assert auto.exit_code in (0, 1) and "Traceback" not in auto.output


def test_eval_exit_code_orders_errors_before_failures():
    from endstate_author.cli_eval import eval_exit_code

    passed, failed = _r("a", True), _r("b", False)
    errored = _r("c", False, error="sandbox error: the container stopped")
    assert eval_exit_code([passed, passed]) == 0
    assert eval_exit_code([passed, failed]) == 1
    assert eval_exit_code([passed, errored]) == 2
    assert eval_exit_code([failed, errored, passed]) == 2  # unknown outranks known-bad


def test_eval_exits_2_when_a_run_is_unassessed(tmp_path):
    """A real endpoint refusing the key: the one task is an error, so the suite's result is
    unknown and the exit status says so (2), not "failed" (1)."""
    suite = tmp_path / "suite"
    make_task(suite, "t")
    with FakeOpenAI() as server:
        server.fail(401, message="invalid key")
        result = runner.invoke(
            app,
            ["eval", str(suite), "--provider", "openai", "--model", "m", "--base-url",
             server.base_url, "--sandbox", "local"],
        )  # fmt: skip
    assert result.exit_code == 2, result.output
    assert "ERROR" in result.output and "Traceback" not in result.output
