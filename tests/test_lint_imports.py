"""What a lint imports, checked structurally (the speed itself is bench/lint.py's): the pydantic
task model, typer and every grader stay out of a ``lint`` or ``hook lint`` of a sound task."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TASK = ROOT / "tasks" / "fix-help-text-wrap"
HEAVY = ("pydantic", "typer", "endstate_harness.task", "endstate_harness.graders.reference",
         "endstate_harness.graders.judge.grader", "endstate_harness.graders.resolver",
         "endstate_harness.sandbox.base", "endstate_author.vendoring.render")

PROBE = """
import importlib, json, sys
sys.argv = ["endstate-author", *{argv!r}]
code = 0
try:
    importlib.import_module({module!r}).main()
except SystemExit as exc:
    code = exc.code
print(json.dumps({{"code": code, "modules": sorted(sys.modules)}}), file=sys.stderr)
"""


def _imports(module: str, argv: list[str], tmp_path: Path) -> tuple[int, set[str]]:
    env = {"ENDSTATE_AUTHOR_LINT_CACHE": str(tmp_path / "cache"), "PATH": "/usr/bin:/bin"}
    proc = subprocess.run(
        [sys.executable, "-c", PROBE.format(argv=argv, module=module)],
        capture_output=True, text=True, cwd=ROOT, env=env, timeout=120,
    )
    report = json.loads(proc.stderr.strip().splitlines()[-1])
    return report["code"], set(report["modules"])


@pytest.mark.parametrize(
    ("module", "argv"),
    [
        ("endstate_author.cli", ["lint", str(TASK), "--no-cache"]),
        ("endstate_author.cli", ["lint", str(TASK)]),
        ("endstate_author.cli", ["hook", "lint", str(TASK / "task.json")]),
        ("endstate_author.hooks", ["lint", str(TASK / "task.json")]),
    ],
)
def test_a_clean_lint_imports_neither_the_model_nor_typer_nor_a_grader(
    module: str, argv: list[str], tmp_path: Path
) -> None:
    code, modules = _imports(module, argv, tmp_path)
    assert code == 0
    assert not [m for m in HEAVY if m in modules]


def test_an_invalid_manifest_still_gets_the_models_words(tmp_path: Path) -> None:
    """The pydantic model decides what the quick recogniser is not sure of."""
    task = tmp_path / "t"
    (task / "fixture").mkdir(parents=True)
    manifest = json.loads((TASK / "task.json").read_text())
    manifest["max_steps"] = "20"
    (task / "task.json").write_text(json.dumps(manifest))
    (task / "prompt.md").write_text("Fix it.\n")
    code, modules = _imports("endstate_author.cli", ["lint", str(task), "--no-cache"], tmp_path)
    assert code == 1 and "endstate_harness.task" in modules
