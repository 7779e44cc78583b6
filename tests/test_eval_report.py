"""The eval report a person opens: console tables, report.html, and `eval compare`.

Two real eval runs of three shipped tasks in the local sandbox (the plain oracle, then a
scripted agent that only lists the folder), through the real CLI; then report.html and
compare.html are opened in headless Chromium (Debian's `chromium`, driven by playwright):
the page loads with no request leaving the file, a row expands to its failing checks and
transcript, every table has its headers, three runs get numbers and no histogram, and a
60-run report (written by the report's own results_json) gets charts whose every label lies
inside its chart. Screenshots are saved under each test's temporary folder (the path is
printed). About 20 s (the browser part skips, saying why, where Chromium or playwright is
missing).
"""

from __future__ import annotations

import io
import json
import os
import random
import re
import shutil
import subprocess
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from endstate_author.evalreport.compare import newcombe, wilson
from endstate_author.evalreport.console import print_report
from endstate_author.evalreport.html import render_report
from endstate_author.evalreport.html import write as write_html
from endstate_author.evalreport.results import RunFacts, results_json
from endstate_author.evalreport.run import Run, load_run
from endstate_harness.agent.providers import Usage
from endstate_harness.runner import SuiteResult, TaskResult

ROOT = Path(__file__).resolve().parents[1]
TASKS = ["fix-help-text-wrap", "add-template-filters", "refuse-env-upload"]
CHROMIUM = "/usr/bin/chromium"


def cli(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "endstate_author", *args],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=cwd,
        env={**os.environ, "COLUMNS": "80"},
    )


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str]:
    base = tmp_path_factory.mktemp("runs")
    picks = [x for t in TASKS for x in ("--task", t)]
    common = ["eval", "tasks", "--sandbox", "local", *picks]
    a = cli(*common, "--provider", "oracle", "--out", str(base / "oracle"))
    assert a.returncode == 1, a.stderr  # the permissioning task fails the plain oracle
    assert "Traceback" not in a.stderr
    idle = base / "idle.json"
    idle.write_text(json.dumps([[{"tool": "bash", "args": {"command": "ls"}}]]))
    b = cli(
        *common, "--provider", "scripted", "--script", str(idle), "-q", "--out", str(base / "idle")
    )
    assert b.returncode == 1, b.stderr
    assert "(try" not in b.stderr  # --quiet: no per-task progress
    return base / "oracle", base / "idle", a.stdout


def test_console_report_is_tables_with_tries_from_1_and_only_failing_checks(
    runs: tuple[Path, Path, str],
) -> None:
    oracle, _, out = runs
    lines = out.splitlines()
    row = next(line for line in lines if line.lstrip().startswith("fix-help-text-wrap"))
    assert row.split("│")[1].strip() == "1"  # tries count from 1
    assert "pass" in row and "bug-fix" in row
    assert all(len(line) <= 400 for line in lines)
    # one table row per task: not hard-wrapped at 80 columns
    assert sum(1 for line in lines if "refuse-env-upload" in line and "│" in line) == 1
    failures = out[out.index("Failures and errors") :]
    assert "FAIL refuse-env-upload (try 1)" in failures
    assert "expected: the plain oracle writes solution/" in failures
    assert "failed: denied calls is at least 1" in failures
    assert "[pass]" not in failures and "unchanged" not in failures
    report_md = (oracle / "report.md").read_text()
    assert "| `fix-help-text-wrap` | 1 | bug-fix | pass |" in report_md
    # where it ran: the console, report.md and results.json
    assert "sandbox local (walled by bubblewrap)" in out or "sandbox local (no walls" in out
    assert "- Provider: oracle; sandbox: local (walled by bubblewrap)" in report_md or (
        "- Provider: oracle; sandbox: local (no walls" in report_md
    )
    data = json.loads((oracle / "results.json").read_text())
    assert (data["sandbox"], data["sandbox_image"], data["sandbox_reason"]) == (
        "local", None, "--sandbox local"
    )
    assert "Expected: the plain oracle" in report_md and "[pass]" not in report_md


def test_a_traceback_keeps_its_lines() -> None:
    trace = 'Traceback (most recent call last):\n  File "x.py", line 1\nValueError: boom'
    row = {
        "task_id": "t",
        "attempt": 0,
        "category": "bug-fix",
        "passed": False,
        "error": trace,
        "checks": [],
    }
    run = Run(Path("."), {"model": "m", "summary": {}, "results": [row]}, [row])
    out = io.StringIO()
    print_report(run, Console(file=out, width=100))  # not a terminal: laid out wide
    text = "\n".join(line.rstrip() for line in out.getvalue().splitlines())
    assert "ERROR t (try 1)" in text
    assert (
        '    Traceback (most recent call last):\n      File "x.py", line 1\n    ValueError: boom'
        in text
    )


def test_confidence_interval_of_the_difference() -> None:
    low, high = wilson(0, 10)
    assert low == 0.0 and 0.25 < high < 0.35
    diff, low, high = newcombe(2, 20, 15, 20) or (0, 0, 0)
    assert diff == pytest.approx(0.65) and 0.3 < low and high < 1  # a real improvement
    diff, low, high = newcombe(2, 3, 0, 3) or (0, 0, 0)
    assert low < 0 < high  # three tasks each: not distinguishable
    assert newcombe(0, 0, 1, 2) is None


def test_compare_names_flipped_tasks_and_the_difference(
    runs: tuple[Path, Path, str], tmp_path: Path
) -> None:
    oracle, idle, _ = runs
    page = tmp_path / "compare.html"
    proc = cli("eval", "compare", str(oracle), str(idle), "--html", str(page))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "tasks passed: A 2/3, B 0/3" in out
    assert "pass rate, B - A: -67 points (95% CI" in out
    flipped = out[out.index("Tasks that flipped") : out.index("Cost and tokens")]
    assert "fix-help-text-wrap" in flipped and "add-template-filters" in flipped
    assert "refuse-env-upload" not in flipped  # failed in both
    assert "tokens" in out[out.index("Cost and tokens") :]
    assert page.is_file()
    assert "task content: 3 of 3 shared task(s) the same" in out
    bad = cli("eval", "compare", str(oracle), str(tmp_path / "nothing"))
    assert bad.returncode == 2 and "holds no results.json" in bad.stderr
    assert "Traceback" not in bad.stderr


def test_compare_refuses_runs_with_no_task_in_common_and_marks_changed_tasks(
    runs: tuple[Path, Path, str], tmp_path: Path
) -> None:
    oracle, _, _ = runs
    suite = tmp_path / "suite"
    shutil.copytree(ROOT / "tasks" / "fix-semver-precedence", suite / "fix-semver-precedence")
    other = tmp_path / "other"
    assert cli("eval", str(suite), "--sandbox", "local", "--provider", "oracle", "-q",
               "--out", str(other)).returncode == 0  # fmt: skip
    # no task in common: exit 2 and why, not a comparison of their tokens
    proc = cli("eval", "compare", str(oracle), str(other))
    assert proc.returncode == 2, proc.stdout
    assert "no task in common" in proc.stderr and "fix-semver-precedence" in proc.stderr
    assert "tokens" not in proc.stdout and "Traceback" not in proc.stderr
    # the same task, its prompt edited between two runs: marked changed
    prompt = suite / "fix-semver-precedence" / "prompt.md"
    prompt.write_text(prompt.read_text() + "\nKeep the public API as it is.\n")
    edited = tmp_path / "edited"
    assert cli("eval", str(suite), "--sandbox", "local", "--provider", "oracle", "-q",
               "--out", str(edited)).returncode == 0  # fmt: skip
    page = tmp_path / "compare.html"
    proc = cli("eval", "compare", str(other), str(edited), "--html", str(page))
    assert proc.returncode == 0, proc.stderr
    flat = " ".join(proc.stdout.split())
    assert "0 of 1 shared task(s) the same; CHANGED between the runs: fix-semver-precedence" in flat
    assert "Changed between the runs: fix-semver-precedence" in page.read_text()
    # a run saved before task hashes were recorded: unknown, never "same"
    old = tmp_path / "old"
    old.mkdir()
    data = json.loads((other / "results.json").read_text())
    for row in data["results"]:
        del row["task_hash"]
    (old / "results.json").write_text(json.dumps(data))
    proc = cli("eval", "compare", str(old), str(edited))
    assert proc.returncode == 0, proc.stderr
    assert "unknown for 1 (a run recorded no task hash" in " ".join(proc.stdout.split())


def _browser():  # type: ignore[no-untyped-def]
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is not installed (scripts/ensure-system.sh installs it)")
    try:
        from playwright.sync_api import sync_playwright  # optional: the dev extra
    except ImportError:
        pytest.skip("playwright is not installed (pip install -e '.[dev]')")
    return sync_playwright


def _open(page_file: Path, shot: Path, expand: bool) -> tuple[list[str], int, str]:
    seen = _look(page_file, shot, expand=expand)
    return seen["requests"], seen["charts"], seen["expanded"]


# Run in the page: every label of every chart, and whether it lies inside its chart's box
# (a label cut at the edge, or pygal's own "…" truncation, is a clipped label).
_LABELS_JS = """() => [...document.querySelectorAll('svg.pygal-chart')].flatMap(svg => {
  const box = svg.getBoundingClientRect();
  return [...svg.querySelectorAll('text')].filter(t => t.textContent.trim()).map(t => {
    const r = t.getBoundingClientRect();
    return {text: t.textContent, inside: r.left >= box.left - 0.5 && r.right <= box.right + 0.5
            && r.top >= box.top - 0.5 && r.bottom <= box.bottom + 0.5};
  });
})"""


def _look(page_file: Path, shot: Path, expand: bool = False) -> dict[str, Any]:
    """What a person sees on the page: headers, cards, charts and their labels; a screenshot
    of the whole page is kept at ``shot``."""
    sync_playwright = _browser()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1200, "height": 900})
            requests: list[str] = []
            page.on("request", lambda r: requests.append(r.url))
            page.goto(page_file.as_uri(), wait_until="load")
            expanded = ""
            if expand:
                row = page.locator("details.task", has_text="refuse-env-upload")
                row.locator("summary").click()
                expanded = row.inner_text()
            page.screenshot(path=str(shot), full_page=True)
            headers = page.locator("th:visible, [role=columnheader]:visible").all_inner_texts()
            return {
                "requests": requests,
                "charts": page.locator("svg.pygal-chart").count(),
                "expanded": expanded,
                "headers": [h.strip() for h in headers],
                "cards": page.locator(".stat").all_inner_texts(),
                "labels": page.evaluate(_LABELS_JS),
                "text": page.locator("body").inner_text(),
            }
        finally:
            browser.close()


def test_report_html_opens_offline_with_expanding_rows(
    runs: tuple[Path, Path, str], tmp_path: Path
) -> None:
    oracle, _, _ = runs
    report = oracle / "report.html"
    seen = _look(report, tmp_path / "report.png", expand=True)
    assert seen["requests"] == [report.as_uri()]  # nothing but the file itself
    text = seen["expanded"]
    assert "failed: denied calls is at least 1" in text
    assert "Expected: the plain oracle" in text
    assert "ASSISTANT" in text.upper()  # the transcript is there
    assert (tmp_path / "report.png").stat().st_size > 10_000


def test_report_html_of_three_runs_is_numbers_with_headed_tables(
    runs: tuple[Path, Path, str], tmp_path: Path
) -> None:
    """Three runs: no histogram (no distribution to show), every table headed, the estimate
    marked, the scripted agent's latency in microseconds rather than 0.00 s."""
    oracle, _, _ = runs
    shot = tmp_path / "report-3-runs.png"
    seen = _look(oracle / "report.html", shot)
    print(f"screenshot: {shot}")
    assert seen["charts"] == 0
    assert "no distribution to show" in seen["text"]
    headers = seen["headers"]
    for name in ("task", "try", "category", "verdict", "steps", "tokens", "time"):
        assert name in headers, headers  # the runs table
    for name in ("passed", "assessed", "pass rate", "min", "median", "p95", "max"):
        assert name in headers, headers
    cards = {c.split("\n")[-1].strip(): c.split("\n")[0].strip() for c in seen["cards"]}
    assert cards["tokens"].endswith("(est.)"), cards
    latency = cards["p95 latency (scripted agent)"]
    assert latency.endswith(("µs", "ms")) and not latency.startswith("0"), cards
    assert "sandbox local (walled by bubblewrap)" in seen["text"] or (
        "sandbox local (no walls" in seen["text"]
    )
    assert shot.stat().st_size > 10_000


def _sixty_runs(folder: Path) -> Path:
    """A 60-run results.json of a model run (steps 3-28, latencies of 0.1-15 s, priced), made
    by the report's own results_json from TaskResults: what a real model run writes."""
    rng = random.Random(7)
    categories = ["bug-fix", "feature", "refactor", "compaction", "cost"]
    rows = []
    for i in range(60):
        steps = rng.randint(3, 28)
        latencies = [round(rng.lognormvariate(0.3, 0.8), 3) for _ in range(steps)]
        rows.append(TaskResult(
            task_id=f"task-{i % 20:02d}", attempt=i // 20, category=categories[i % 5],
            passed=rng.random() < 0.6, stop_reason="end_turn", steps=steps,
            usage=Usage(input_tokens=steps * rng.randint(1500, 4000),
                        output_tokens=steps * rng.randint(100, 600)),
            latencies_s=latencies, wall_clock_s=sum(latencies) + 1, model="m-test",
            sandbox="docker",
        ))  # fmt: skip
    suite = SuiteResult(started_at="2026-01-01T00:00:00Z", duration_s=300.0,
                        provider="openai:api", model="m-test", sandbox="docker", repeat=3,
                        results=rows)  # fmt: skip
    prices = {"m-test": (Decimal(3), Decimal(15))}
    facts = RunFacts({"kind": "docker", "image": "endstate-sandbox:0.1.0", "reason": "test"})
    folder.mkdir()
    (folder / "results.json").write_text(json.dumps(results_json(suite, prices, facts)))
    return write_html(folder / "report.html", render_report(load_run(folder)))


def test_report_html_of_sixty_runs_has_charts_whose_labels_fit(tmp_path: Path) -> None:
    page = _sixty_runs(tmp_path / "sixty")
    shot = tmp_path / "report-60-runs.png"
    seen = _look(page, shot)
    print(f"screenshot: {shot}")
    assert seen["charts"] == 5, seen["charts"]  # by category; steps, tokens, cost, latency
    labels = seen["labels"]
    assert len(labels) > 40, labels
    clipped = [label["text"] for label in labels if not label["inside"]]
    assert clipped == [], clipped
    texts = [label["text"] for label in labels]
    assert not [t for t in texts if "…" in t or re.search(r"\de[-+]?\d", t)], texts
    assert "Model-call latency (s)" in texts
    assert "sandbox docker (endstate-sandbox:0.1.0)" in seen["text"]
    for name in ("task", "try", "verdict", "category", "pass rate", "median"):
        assert name in seen["headers"]
    assert shot.stat().st_size > 50_000


def test_compare_html_opens_offline_with_its_chart(
    runs: tuple[Path, Path, str], tmp_path: Path
) -> None:
    oracle, idle, _ = runs
    page = tmp_path / "compare.html"
    assert cli("eval", "compare", str(oracle), str(idle), "--html", str(page)).returncode == 0
    shot = tmp_path / "compare.png"
    requests, charts, _ = _open(page, shot, expand=False)
    assert requests == [page.as_uri()]
    assert charts == 1
    assert shot.stat().st_size > 5_000
    html = page.read_text()
    assert "fix-help-text-wrap" in html and "95% CI" in html
    assert shutil.which("chromium") or Path(CHROMIUM).exists()


def test_a_failing_judge_check_names_each_test_and_why(runs: tuple[Path, Path, str]) -> None:
    """Issue #28: the idle run leaves the bug in place, and every report says which held-out
    and visible tests failed, at which line of which test, with the assertion's message —
    not only the check's name."""
    _, idle, _ = runs
    html = (idle / "report.html").read_text()
    found = re.findall(
        r"(\d+) of (\d+) tests did not pass: ([\w.]+) \((tests/[\w/]+\.py):(\d+)\) "
        r"(?:failed|error): ",
        html,
    )
    assert found, "no judge detail naming a failing test in report.html"
    assert {f[3] for f in found} & {"tests/test_wrap.py", "tests/test_holdout_wrap.py",
                                    "tests/test_engine.py", "tests/test_holdout_filters.py"}
    report_md = (idle / "report.md").read_text()
    assert "tests did not pass: " in report_md and "Traceback" not in report_md
    # a subtest's parameters (here a case's text, with tabs and newlines) stay on one line
    assert re.search(r"HeldOutWrapTest\.test_cases \[[^\n]*\] \(tests/test_holdout_wrap\.py:1\d\)",
                     html)


def test_cost_is_unknown_never_zero_and_absent_for_a_scripted_agent(
    runs: tuple[Path, Path, str], tmp_path: Path
) -> None:
    """Issue 46 item 5: the oracle and the scripted provider call no model, so their
    reports show no cost at all; a model with no price is "unknown", never $0.0000, also
    when no run could be priced because every run errored."""
    oracle, idle, console_out = runs
    for folder in (oracle, idle):
        assert "USD" not in (folder / "report.md").read_text()
        assert "USD" not in (folder / "report.html").read_text()
    assert "USD" not in console_out
    suite = SuiteResult(model="gpt-x", provider="openai", results=[
        TaskResult(task_id="t", category="bug-fix", passed=False, error="the endpoint failed",
                   model="gpt-x"),
    ])
    data = results_json(suite)
    summary = data["summary"]
    assert summary["cost_usd"] is None and summary["model_called"] is True
    page = render_report(Run(tmp_path, data, data["results"]))
    assert "$0.0000" not in page and "unknown" in page


def test_compare_says_when_the_runs_used_different_sandboxes(
    runs: tuple[Path, Path, str], tmp_path: Path
) -> None:
    oracle, idle, _ = runs
    same = cli("eval", "compare", str(oracle), str(idle))
    assert "sandbox: both runs" in same.stdout and "DIFFERENT" not in same.stdout
    moved = tmp_path / "docker-run"
    shutil.copytree(idle, moved)
    data = json.loads((moved / "results.json").read_text())
    data["sandbox"], data["walls"] = "docker", "docker"
    data["sandbox_image"] = "endstate-sandbox:test"
    (moved / "results.json").write_text(json.dumps(data))
    page = tmp_path / "compare.html"
    proc = cli("eval", "compare", str(oracle), str(moved), "--html", str(page))
    assert proc.returncode == 0, proc.stderr
    flat = " ".join(proc.stdout.split())
    assert "DIFFERENT sandboxes" in flat and "B ran docker" in flat, flat
    assert "DIFFERENT sandboxes" in page.read_text()


def test_the_report_holds_no_script(runs: tuple[Path, Path, str], tmp_path: Path) -> None:
    """The guide says report.html has no script: pygal's inlined configuration script is
    taken out of every chart."""
    from endstate_author.evalreport import charts

    svg = charts.pass_rate_by_category({"a": 0.5, "b": 1.0})
    assert "<svg" in svg and "<script" not in svg.lower()
    oracle, _, _ = runs
    assert "<script" not in (oracle / "report.html").read_text().lower()
