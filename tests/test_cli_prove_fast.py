"""``prove`` without typer (:mod:`endstate_author.cli.prove_command`): a plain command line runs
with neither typer, nor rich unless it draws, nor pydantic (issue 48: typer, rich and the
pydantic task model were ~0.25 s of a one-check prove's 0.33 s); its reader takes exactly what
the typer command would hand the command, and leaves everything else to typer."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from endstate_author.cli import prove_command
from tests.conftest import require_walls

ROOT = Path(__file__).resolve().parents[1]
TASK = ROOT / "tasks" / "fix-help-text-wrap"

PROBE = """
import json, sys
sys.argv = ["endstate-author", *{argv!r}]
from endstate_author.cli import main
code = 0
try:
    main()
except SystemExit as exc:
    code = exc.code
print(json.dumps({{"code": code, "modules": sorted(sys.modules)}}), file=sys.stderr)
"""
LAZY = ("typer", "click", "rich", "pydantic", "endstate_harness.task_model",
        "endstate_harness.verdict_model", "endstate_author.rules.registry",
        "endstate_author.prove.checks.mutants")
"""What a clean one-check prove with JSON output never needs: typer, rich (nothing drawn),
pydantic and the two models (a sound task, a judge's report of plain types), every rule
family (a fix line is for a finding), the mutants' generator (no mutant asked for)."""


def _run(argv: list[str], tmp_path: Path) -> tuple[int, set[str], str]:
    env = {"ENDSTATE_AUTHOR_CACHE": str(tmp_path / "cache"), "PATH": "/usr/bin:/bin",
           "HOME": str(tmp_path), "LANG": "C.UTF-8", "PYTHONIOENCODING": "utf-8"}
    proc = subprocess.run([sys.executable, "-c", PROBE.format(argv=argv)], capture_output=True,
                          text=True, cwd=ROOT, env=env, timeout=300)
    report = json.loads(proc.stderr.strip().splitlines()[-1])
    return report["code"], set(report["modules"]), proc.stdout


def _loaded(modules: set[str], name: str) -> bool:
    return any(m == name or m.startswith(name + ".") for m in modules)


def test_a_one_check_prove_imports_neither_typer_nor_rich_nor_pydantic(
        tmp_path: Path) -> None:
    require_walls()
    code, modules, out = _run(["prove", "--only", "visible", "--no-cache", "--sandbox", "local",
                               "-o", "json", str(TASK)], tmp_path)
    assert code == 0, out
    checks = json.loads(out)["tasks"][0]["checks"]
    assert [(c["check"], c["outcome"]) for c in checks] == [
        ("visible tests fail on the fixture", "pass")]
    assert not [m for m in LAZY if _loaded(modules, m)]


def test_the_text_report_imports_rich_to_draw_it_and_still_no_typer(tmp_path: Path) -> None:
    require_walls()
    code, modules, out = _run(["prove", "--only", "visible", "--no-cache", "--sandbox", "local",
                               str(TASK)], tmp_path)
    assert code == 0 and "visible tests fail on the fixture" in out
    assert "1 task(s): 1 checks passed" in out
    assert _loaded(modules, "rich") and not _loaded(modules, "typer")


def test_what_the_reader_does_not_take_goes_to_typer(tmp_path: Path) -> None:
    code, modules, _ = _run(["prove", "--jobs", "0", str(TASK)], tmp_path)
    assert code == 2 and _loaded(modules, "typer")  # typer's own words for a value out of range


def test_the_reader_knows_exactly_the_commands_options() -> None:
    """Every option the reader takes is one of the typer command's, and every option of the
    command is read (``--help`` is typer's)."""
    import typer.main

    from endstate_author.cli.app import app

    command = typer.main.get_command(app).commands["prove"]  # type: ignore[attr-defined]
    declared = {opt for p in command.params for opt in getattr(p, "opts", [])
                if opt.startswith("-")}
    read = set(prove_command._FLAGS) | set(prove_command._VALUES)
    assert read == declared - {"--help"}


@pytest.mark.parametrize("argv", [
    ["t"],
    ["t", "u", "--only", "visible", "--only=holdout", "--no-cache", "-q"],
    ["--sandbox=local", "t", "-j", "3", "--repeat", "2", "--mutants", "0", "--strict"],
    ["t", "--mutant-budget", "2.5", "--counterexample-budget=0", "-o", "json"],
    ["t", "--output-format", "sarif", "--progress-json", "--progress-lines", "--image", "img"],
    ["t", "--mutation-report", "out", "--executor", "local", "--address", "a:1"],
])
def test_the_reader_hands_run_what_typer_hands_it(
        argv: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """The same keyword arguments reach :func:`prove_command.run` through either path."""
    from typer.testing import CliRunner

    from endstate_author.cli import cmd_prove
    from endstate_author.cli.app import app

    seen: list[dict[str, Any]] = []

    def spy(paths: list[Path], **kwargs: Any) -> int:
        seen.append({"paths": list(paths), **kwargs})
        return 0

    monkeypatch.setattr(cmd_prove, "run", spy)
    result = CliRunner().invoke(app, ["prove", *argv])
    assert result.exit_code == 0, result.output
    typed = {k: (v.value if hasattr(v, "value") else v) for k, v in seen[0].items()}
    ours = prove_command.parse(["prove", *argv])
    assert ours is not None
    defaults = {k: (v.value if hasattr(v, "value") else v) for k, v in typed.items()
                if k not in ours}
    read = {k: (v.value if hasattr(v, "value") else v) for k, v in ours.items()}
    assert {**defaults, **read} == typed
    assert set(ours) - set(typed) == set()
    assert all(typed[k] == _default(k) for k in defaults), defaults


def _default(name: str) -> Any:
    import inspect

    value = inspect.signature(prove_command.run).parameters[name].default
    return value.value if hasattr(value, "value") else (list(value) if value == () else value)


@pytest.mark.parametrize("argv", [
    [], ["--help"], ["t", "--help"], ["t", "--jobs", "0"], ["t", "-j"], ["t", "--only", "nope"],
    ["t", "--sandbox", "Docker"], ["t", "--mutant-budget", "nan"], ["t", "--colour"],
    ["t", "--", "u"], ["t", "-qj", "2"], ["t", "--image", "--strict"], ["t", "-o=json"], [""],
])
def test_the_reader_leaves_to_typer_what_it_is_not_sure_of(argv: list[str]) -> None:
    assert prove_command.parse(["prove", *argv]) is None
