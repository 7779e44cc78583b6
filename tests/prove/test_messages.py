"""How prove's findings read: outcome first, never cut, wrapped between words, grouped, one
fix each, consequences folded into their cause.

Most tests build check results directly (milliseconds); one proves two tasks written here
through the real CLI in the local sandbox (about 15 s): the authoring guide's task (whose
``command_succeeds`` accepts many reward hacks) and a task whose graders pass on the fixture.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

from endstate_author.lint.formats import render_json, render_sarif, render_text
from endstate_author.prove.grading import failed_check
from endstate_author.prove.messages import LEADS, diagnostics, message
from endstate_author.prove.model import CheckResult
from endstate_author.rules.registry import fix_line
from tests.rules.conftest import TaskBuilder, good

ARGS = ["--sandbox", "local", "--only", "directions", "--only", "probes", "-o", "json"]
LONG = ", ".join(f"tests.test_parser.ParseLineTest.test_case_number_{i}" for i in range(30))


def _fail(check: str, code: str, detail: str, index: int | None = None) -> CheckResult:
    return CheckResult(check, "g", "fail", detail=detail, code=code, grader_index=index)


def test_every_es9_code_leads_with_its_outcome_and_has_a_one_line_fix() -> None:
    for code in [f"ES90{i}" for i in range(1, 10)] + ["ES910"]:
        assert code in LEADS
        fix = fix_line(code)
        assert fix and "\n" not in fix and fix.endswith("."), code
        text = message(code, [_fail("x", code, "what happened")])
        assert text.startswith(LEADS[code] + ": what happened")
        assert text.endswith(f". Fix: {fix}")


def test_a_failing_solution_reads_as_a_failure_not_as_the_checks_name() -> None:
    detail = failed_check("changes confined to the task's paths", "kvconf/parser.py\nmore")
    text = message("ES902", [_fail("solution passes", "ES902", detail, 3)])
    # the check's name is quoted as what was expected; its detail, whole, is what happened
    assert text.startswith(
        "fails on the solution: expected \"changes confined to the task's paths\", got: "
        "kvconf/parser.py more"
    )
    assert not text.startswith("solution passes")


def test_details_are_never_cut_in_json_or_sarif(tmp_path: Path) -> None:
    (tmp_path / "task.json").write_text('{"graders": []}\n')
    detail = failed_check("tests pass", f"failing: {LONG}")
    found = diagnostics(tmp_path, [_fail("solution passes", "ES902", detail)])
    assert LONG in json.loads(render_json(found))[0]["message"]
    sarif = json.loads(render_sarif(found))
    assert LONG in sarif["runs"][0]["results"][0]["message"]["text"]


def test_text_is_wrapped_between_words_only(tmp_path: Path) -> None:
    (tmp_path / "task.json").write_text('{"graders": []}\n')
    found = diagnostics(
        tmp_path,
        [
            _fail("solution passes", "ES902", f"failing: {LONG}", 0),
            _fail("holdout sentinel", "ES903", f"never run: {LONG}"),
        ],
    )
    assert len(found) == 2  # the second one is wrapped as the first (no state carried over)
    out = io.StringIO()
    render_text(found, out, color=False, width=70)
    lines = [line for line in out.getvalue().splitlines() if "│" not in line]
    body = [line for line in lines if line.startswith("  ") or line.startswith(" " * 11)]
    assert len(body) > 6  # both wrapped, not one long line each
    for line in body:  # no line over the width unless it is one unbreakable word
        assert len(line) <= 70 or " " not in line.strip(), line
    words = " ".join(" ".join(body).split()).split(" ")
    assert "tests.test_parser.ParseLineTest.test_case_number_29" in " ".join(words)
    for word in re.findall(r"tests\.\S+?test_case_number_\d+", " ".join(words)):
        assert word.startswith("tests.test_parser.ParseLineTest.test_case_number_")


def test_same_code_same_place_is_one_finding_listing_what_differs(tmp_path: Path) -> None:
    (tmp_path / "task.json").write_text('{"graders": []}\n')
    note = " — only the holdout can stop this one: assert exact types"
    results = [
        _fail("probe early-exit", "ES906", "the graders accept early-exit (wrote a/__init__.py)"),
        _fail(
            "probe early-exit (with stubs)",
            "ES906",
            "the graders accept early-exit (wrote a/__init__.py)",
        ),
        _fail(
            "probe always-equal", "ES906", "the graders accept always-equal (wrote a/x.py)" + note
        ),
        _fail(
            "probe read-the-test", "ES906", "the graders accept read-the-test (wrote a/y.py)" + note
        ),
        _fail("solution passes", "ES902", "failed: x", 1),
    ]
    found = diagnostics(tmp_path, results)
    assert [d.code for d in found] == ["ES906", "ES902"]
    text = found[0].message
    assert text.startswith("passes although hacked: 4 checks: the graders accept early-exit")
    assert text.count("early-exit (wrote a/__init__.py)") == 1
    assert "always-equal (wrote a/x.py), read-the-test (wrote a/y.py)" in text
    assert text.count("only the holdout can stop this one") == 1
    assert text.endswith(fix_line("ES906"))


def test_a_consequence_is_folded_into_its_cause(tmp_path: Path) -> None:
    (tmp_path / "task.json").write_text('{"graders": []}\n')
    results = [
        _fail("fixture fails", "ES901", "every check passed on the untouched fixture"),
        *[_fail(f"probe p{i}", "ES906", f"the graders accept p{i}") for i in range(6)],
        _fail("defect d fails", "ES910", "defects/d/ passes every grader"),
    ]
    found = diagnostics(tmp_path, results)
    assert [d.code for d in found] == ["ES901"]
    assert "6 reward hack(s) (ES906)" in found[0].message
    assert "1 declared defect(s) (ES910)" in found[0].message


def test_prove_reports_the_guide_task_as_one_grouped_finding(tmp_path: Path) -> None:
    build = TaskBuilder(tmp_path / "suite")
    build(good())
    build(good(id="passes-untouched", graders=[{"name": "endstate.evals.graders:no_new_skips"}]))
    env = {**os.environ, "ENDSTATE_AUTHOR_CACHE": str(tmp_path / "cache")}
    proc = subprocess.run(
        [sys.executable, "-m", "endstate_author", "prove", str(tmp_path / "suite"), "-q", *ARGS],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert proc.returncode == 1, proc.stderr
    reported = json.loads(proc.stdout)["diagnostics"]
    # the guide's task also draws the static ES311 warning (tested in test_prove.py)
    assert [d["code"] for d in reported if d["severity"] == "warning"] == ["ES311"]
    found = [d for d in reported if d["severity"] == "error"]
    by_task = {Path(d["file"]).parent.name: d for d in found}
    assert len(found) == 2, found  # one per task: no repeats, no ES906 after ES901
    hacked = by_task["fix-chunk-off-by-one"]
    assert hacked["code"] == "ES906"
    assert hacked["message"].startswith("passes although hacked: ")
    assert "early-exit" in hacked["message"]
    assert hacked["message"].endswith(fix_line("ES906"))
    untouched = by_task["passes-untouched"]
    assert untouched["code"] == "ES901"
    assert untouched["message"].startswith("passes although nothing was done: ")
    assert "reward hack(s) (ES906) pass too" in untouched["message"]


def test_the_oracle_failing_is_folded_into_the_failing_solution(tmp_path: Path) -> None:
    (tmp_path / "task.json").write_text('{"graders": []}\n')
    results = [
        _fail("solution passes", "ES902", "failed: judge tests/", 0),
        _fail("oracle through the harness", "ES907", "failed: judge tests/"),
    ]
    [found] = diagnostics(tmp_path, results)
    assert found.code == "ES902"
    assert "1 oracle run(s) through the harness (ES907) fail too, not listed apart" in found.message
    # alone (the solution passes, a bound of the real run does not), ES907 is its own finding
    [alone] = diagnostics(tmp_path, results[1:])
    assert alone.code == "ES907"


def test_a_failing_solution_reports_one_cause_and_judges_no_mutant(tmp_path: Path) -> None:
    """Through the real CLI: a scaffold whose solution is wrong. ES902 alone (not ES907 beside
    it), and its mutants are "not judged", never "all passed" with a 5/5 mutation score."""
    suite = tmp_path / "suite"
    env = {**os.environ, "ENDSTATE_AUTHOR_CACHE": str(tmp_path / "cache")}
    made = subprocess.run(
        [sys.executable, "-m", "endstate_author", "new", "wrong-fix", "-c", "bug-fix",
         "--suite", str(suite)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    core = suite / "wrong-fix" / "solution" / "app" / "core.py"
    core.write_text(core.read_text().replace("min(high, max(low, value))", "max(low, value) + 0"))
    only = ["--only", "directions", "--only", "oracle", "--only", "mutants", "--only", "defects"]
    base = [sys.executable, "-m", "endstate_author", "prove", str(suite), "--sandbox", "local"]
    proc = subprocess.run(
        [*base, *only, "-o", "json", "-q"], capture_output=True, text=True, timeout=600, env=env
    )
    assert proc.returncode == 1, proc.stderr
    data = json.loads(proc.stdout)
    assert [d["code"] for d in data["diagnostics"]] == ["ES902"], data["diagnostics"]
    assert "(ES907) fail too" in data["diagnostics"][0]["message"]
    [task] = data["tasks"]
    mutants = [c for c in task["checks"] if c["check"].startswith("mutant ")]
    assert mutants and all(c["outcome"] == "skipped" for c in mutants), mutants
    assert all("solution itself fails" in c["detail"] for c in mutants)
    assert "mutation_score" not in task
    text = subprocess.run(
        [*base, *only, "-q"], capture_output=True, text=True, timeout=600, env=env
    ).stdout
    assert "mutants: all" not in text and "mutation score" not in text, text
    assert re.search(r"mutants: \d+ skipped", text), text
