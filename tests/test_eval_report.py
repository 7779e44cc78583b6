"""The eval report a person opens: console tables, report.html, and `eval compare`.

Two real eval runs of three shipped tasks in the local sandbox (the plain oracle, then a
scripted agent that only lists the folder), through the real CLI; then report.html and
compare.html are opened in headless Chromium (Debian's `chromium`, driven by playwright):
the page loads with no request leaving the file, the charts are there, a row expands to its
failing checks and transcript, and a screenshot is saved under the test's temporary folder.
About 20 s (the browser part skips, saying why, where Chromium or playwright is missing).
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from endstate_author.evalreport.compare import newcombe, wilson
from endstate_author.evalreport.console import print_report
from endstate_author.evalreport.run import Run

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
    bad = cli("eval", "compare", str(oracle), str(tmp_path / "nothing"))
    assert bad.returncode == 2 and "holds no results.json" in bad.stderr
    assert "Traceback" not in bad.stderr


def _browser():  # type: ignore[no-untyped-def]
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is not installed (scripts/ensure-system.sh installs it)")
    try:
        from playwright.sync_api import sync_playwright  # optional: the dev extra
    except ImportError:
        pytest.skip("playwright is not installed (pip install -e '.[dev]')")
    return sync_playwright


def _open(page_file: Path, shot: Path, expand: bool) -> tuple[list[str], int, str]:
    sync_playwright = _browser()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1200, "height": 900})
            requests: list[str] = []
            page.on("request", lambda r: requests.append(r.url))
            page.goto(page_file.as_uri(), wait_until="load")
            charts = page.locator("svg.pygal-chart").count()
            text = ""
            if expand:
                row = page.locator("details.task", has_text="refuse-env-upload")
                row.locator("summary").click()
                text = row.inner_text()
            page.screenshot(path=str(shot), full_page=True)
            return requests, charts, text
        finally:
            browser.close()


def test_report_html_opens_offline_with_charts_and_expanding_rows(
    runs: tuple[Path, Path, str], tmp_path: Path
) -> None:
    oracle, _, _ = runs
    report = oracle / "report.html"
    shot = tmp_path / "report.png"
    requests, charts, text = _open(report, shot, expand=True)
    assert requests == [report.as_uri()]  # nothing but the file itself
    assert charts >= 4  # pass rate by category; steps, tokens, latency (cost has no price)
    assert "failed: denied calls is at least 1" in text
    assert "Expected: the plain oracle" in text
    assert "ASSISTANT" in text.upper()  # the transcript is there
    assert shot.stat().st_size > 10_000


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
