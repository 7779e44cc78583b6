"""``prove --mutation-report DIR`` (issue 44 item 6): the mutants in the mutation-testing
report schema, validated against the schema its authors publish (fetched with npm, as the
wheel build fetches the web component), and the HTML view opened in a real headless Chromium
with every request watched: the component renders the file, its survivors and a survivor's
counterexample, and the page asks for nothing from the network.

The npm part skips, saying why, where npm or its registry cannot be reached; the browser part
where Chromium or playwright is missing (scripts/ensure-system.sh installs Chromium).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from types import ModuleType
from typing import Any

import jsonschema
import pytest

from endstate_author.prove import mutation_report
from endstate_author.prove.checks.mutants import SAMPLED_OUT, mutant_set
from endstate_author.prove.model import CheckResult, TaskProof
from endstate_harness.task import load_task
from tests.prove.test_counterexample import _weak_chunker
from tests.rules.conftest import TaskBuilder

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"


def _web_assets() -> ModuleType:
    spec = importlib.util.spec_from_file_location("web_assets", ROOT / "scripts/web_assets.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def assets(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The pinned component and the published schema, fetched with npm (integrity checked)."""
    module = _web_assets()
    folder = tmp_path_factory.mktemp("web-assets")
    try:
        module.fetch(module.ELEMENTS, folder)
        module.fetch(module.SCHEMA, folder)
    except module.FetchError as exc:
        print(f"npm could not fetch the web assets: {exc}")
        pytest.skip(f"npm could not fetch the web assets: {exc}")
    return folder


@pytest.fixture(scope="module")
def proved(assets: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Path]:
    """The real prove (mutants only, local sandbox) of a task whose holdout lets mutants
    survive, with ``--mutation-report``: prove's JSON and the report folder."""
    base = tmp_path_factory.mktemp("proved")
    task = _weak_chunker(TaskBuilder(base / "suite"))
    out = base / "report"
    env = {**os.environ, "ENDSTATE_AUTHOR_CACHE": str(base / "cache"),
           mutation_report.ASSETS_ENV: str(assets)}
    proc = subprocess.run(
        [sys.executable, "-m", "endstate_author", "prove", "--sandbox", "local", "--only",
         "mutants", "-o", "json", "--mutation-report", str(out), str(task)],
        capture_output=True, text=True, timeout=600, env=env,
    )
    assert "Traceback" not in proc.stderr, proc.stderr
    assert f"mutation report view: {out / 'mutation-report.html'}" in proc.stderr, proc.stderr
    return json.loads(proc.stdout), out


def _schema(assets: Path) -> dict[str, Any]:
    return json.loads((assets / "mutation-testing-report-schema.json").read_text())


def test_the_json_is_valid_and_holds_every_mutant_with_its_fate(
    proved: tuple[dict[str, Any], Path], assets: Path
) -> None:
    data, out = proved
    report = json.loads((out / "mutation-report.json").read_text())
    jsonschema.Draft7Validator(_schema(assets)).validate(report)
    [task] = data["tasks"]
    score = task["mutation_score"]
    [(key, file)] = report["files"].items()
    assert key == f"{task['task']}/solution/chunker/core.py"
    mutants = file["mutants"]
    statuses = Counter(m["status"] for m in mutants)
    assert len(mutants) == score["generated"]
    assert statuses["Killed"] == score["killed"] > 0
    assert statuses["Survived"] == score["survived"] > 0
    assert statuses["Ignored"] == score["sampled_out"] + score["equivalent"] + score["not_run"]
    checks = {c["check"].split()[1]: c for c in task["checks"] if c["check"].startswith("mutant m")}
    lines = len(file["source"].splitlines())
    for mutant in mutants:
        where = mutant["location"]
        assert 1 <= where["start"]["line"] <= where["end"]["line"] <= lines
        check = checks.get(mutant["id"])
        if mutant["status"] == "Survived":
            assert check is not None and check["outcome"] == "fail"
            assert mutant["statusReason"] == check["detail"]
            example = check.get("counterexample")
            if example:  # ES911: the call that tells it from the solution, in the description
                assert f"counterexample: {example['call']}" in mutant["description"]
    assert any("counterexample: chunk(" in m["description"] for m in mutants)


def _browser():  # type: ignore[no-untyped-def]
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is not installed (scripts/ensure-system.sh installs it)")
    try:
        from playwright.sync_api import sync_playwright  # optional: the dev extra
    except ImportError:
        pytest.skip("playwright is not installed (pip install -e '.[dev]')")
    return sync_playwright


def test_the_html_view_renders_the_file_and_a_survivor_offline(
    proved: tuple[dict[str, Any], Path],
) -> None:
    _, out = proved
    report = json.loads((out / "mutation-report.json").read_text())
    [file] = report["files"].values()
    survivor = next(m for m in file["mutants"]
                    if m["status"] == "Survived" and "counterexample:" in m["description"])
    sync_playwright = _browser()
    requested: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.on("request", lambda r: requested.append(r.url))
            page.goto((out / "mutation-report.html").as_uri())
            # the metrics table: the file, and its counts
            page.get_by_role("link", name="core.py").click()
            dot = page.locator(
                f"svg.mutant-dot.Survived[data-mutant-id='{survivor['id']}']")
            dot.first.wait_for(timeout=15000)
            assert page.locator("svg.mutant-dot.Survived").count() == sum(
                m["status"] == "Survived" for m in file["mutants"])
            dot.first.click()
            call = survivor["description"].split("counterexample: ", 1)[1].split(";")[0]
            page.locator("mte-drawer-mutant").get_by_text(
                f"counterexample: {call}", exact=False).first.wait_for(timeout=15000)
        finally:
            browser.close()
    # nothing but the page itself and the component it carries (a blob: of its own bytes)
    assert requested and all(u.startswith(("file:", "blob:")) for u in requested), requested


def test_each_outcome_maps_to_the_status_that_says_the_same(
    tmp_path: Path, assets: Path
) -> None:
    """Killed, survived with and without a counterexample, sampled out, not run (budget),
    unassessed, and no check at all (over --mutants): each with its status and reason."""
    root = _weak_chunker(TaskBuilder(tmp_path / "suite"))
    found = mutant_set(load_task(root))
    assert found is not None and len(found.mutants) >= 7
    m = found.mutants

    def check(i: int, outcome: str, detail: str, **extra: Any) -> CheckResult:
        return CheckResult(f"mutant {m[i].id} fails", "mutants", outcome,  # type: ignore[arg-type]
                           detail=detail, path=f"solution/{m[i].path}", line=m[i].line, **extra)

    example = {"call": "chunk([1], 1)", "assertion": "self.assertEqual(chunk([1], 1), [[1]])"}
    proof = TaskProof(root.name, root, [
        check(0, "pass", "killed by the holdout"),
        check(1, "fail", "survives, yet ...", code="ES911", counterexample=example),
        check(2, "fail", "survives, no call found", code="ES916"),
        check(3, "skipped", f"{SAMPLED_OUT}: its line's first mutants were killed"),
        check(4, "skipped", "not run: the task's mutant time budget", unrun=True),
        check(5, "unassessed", "the sandbox could not start", code="ES908"),
    ])
    document = mutation_report.report([proof])
    jsonschema.Draft7Validator(_schema(assets)).validate(document)
    [file] = document["files"].values()
    by_id = {x["id"]: x for x in file["mutants"]}
    got = [(by_id[m[i].id]["status"], by_id[m[i].id].get("statusReason", "")) for i in range(7)]
    assert got[0] == ("Killed", "killed by the holdout")
    assert got[1] == ("Survived", "survives, yet ...")
    assert "counterexample: chunk([1], 1); add to a holdout test: self.assertEqual(" in by_id[
        m[1].id]["description"]
    assert got[2] == ("Survived", "survives, no call found")
    assert got[3][0] == "Ignored" and got[3][1].startswith(SAMPLED_OUT)
    assert got[4] == ("Ignored", "not run: the task's mutant time budget")
    assert got[5][0] == "Ignored" and got[5][1].startswith("not assessed")
    assert got[6][0] == "Ignored" and got[6][1].startswith("not run")


def test_a_mutant_s_location_spans_the_lines_it_changes() -> None:
    span = mutation_report._span("a\nb\nc\n", "a\nB\nc\n", 2)
    assert (span.start, span.end, span.replacement) == ((2, 1), (2, 2), "B")
    gone = mutation_report._span("a\nb\nc\n", "a\nc\n", 2)
    assert (gone.start, gone.end, gone.replacement) == ((2, 1), (2, 2), "")
    added = mutation_report._span("a\nc\n", "a\nb\nc\n", 2)
    assert (added.start, added.end, added.replacement) == ((2, 1), (2, 1), "b\n")
    same = mutation_report._span("a\nbb\n", "a\nbb\n", 2)
    assert (same.start, same.end) == ((2, 1), (2, 3))


def test_the_page_cannot_be_closed_early_by_what_the_report_holds() -> None:
    """A solution's text with ``</script>`` stays data: the page has exactly its own
    scripts, and the report round-trips."""
    document = {"files": {"t/solution/a.py": {"source": "x = '</script><script>alert(1)'"}}}
    page = mutation_report.html(document, b"/* </script> */")
    assert page.count("</script>") == 3 and page.count("<script") == 3
    start = page.index('<script id="report" type="application/json">') + len(
        '<script id="report" type="application/json">')
    assert json.loads(page[start: page.index("</script>", start)]) == document


def test_a_link_out_of_the_solution_is_never_read_into_the_report(tmp_path: Path) -> None:
    solution = tmp_path / "solution"
    (solution / "pkg").mkdir(parents=True)
    (solution / "pkg/mod.py").write_text("x = 1\n")
    outside = tmp_path / "secret.txt"
    outside.write_text("secret\n")
    (solution / "pkg/linked.py").symlink_to(outside)
    (tmp_path / "elsewhere").mkdir()
    (solution / "via").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    (tmp_path / "elsewhere/mod.py").write_text("y = 2\n")
    assert mutation_report._inside(solution / "pkg/mod.py", solution)
    assert not mutation_report._inside(solution / "pkg/linked.py", solution)
    assert not mutation_report._inside(solution / "via/mod.py", solution)


def test_a_report_folder_that_is_a_file_is_refused_before_any_proof(tmp_path: Path) -> None:
    task = _weak_chunker(TaskBuilder(tmp_path / "suite"))
    taken = tmp_path / "taken"
    taken.write_text("mine\n")
    proc = subprocess.run(
        [sys.executable, "-m", "endstate_author", "prove", "--sandbox", "local", "--only",
         "mutants", "--mutation-report", str(taken), str(task)],
        capture_output=True, text=True, timeout=120,
        env={**os.environ, "ENDSTATE_AUTHOR_CACHE": str(tmp_path / "cache")},
    )
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert f"--mutation-report {taken}: not a folder" in proc.stderr
    assert "proved " not in proc.stderr  # refused before proving
    assert taken.read_text() == "mine\n"


def test_a_link_in_the_report_folder_is_replaced_never_written_through(tmp_path: Path) -> None:
    folder = tmp_path / "report"
    folder.mkdir()
    mine = tmp_path / "mine.txt"
    mine.write_text("mine\n")
    (folder / mutation_report.JSON_NAME).symlink_to(mine)
    (folder / f".{mutation_report.JSON_NAME}.part").symlink_to(mine)
    written, _ = mutation_report.write([], folder, script=None)
    assert not written.is_symlink() and json.loads(written.read_text())["files"] == {}
    assert mine.read_text() == "mine\n"
    assert sorted(p.name for p in folder.iterdir()) == [mutation_report.JSON_NAME] or (
        mutation_report.elements_script() is not None)
