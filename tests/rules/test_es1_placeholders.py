"""ES110: the scaffold's placeholder text left unchanged (description, prompt, example code)."""

from __future__ import annotations

import json
from pathlib import Path

from endstate_author.scaffold import PLACEHOLDER_CODE, create_task
from tests.rules.conftest import lint


def _scaffold(tmp_path: Path, category: str = "bug-fix") -> Path:
    create_task(f"new-{category}", category, tmp_path)
    return tmp_path / f"new-{category}"


def test_es110_every_placeholder_left_in_the_scaffold(tmp_path: Path) -> None:
    task = _scaffold(tmp_path)
    found = [d for d in lint(task) if d.code == "ES110"]
    assert all(d.severity == "warning" for d in found)
    where = sorted(str(d.file.relative_to(task)) for d in found)
    assert where == ["fixture/app/core.py", "prompt.md", "task.json"], found
    [desc] = [d for d in found if d.file.name == "task.json"]
    assert desc.line == 4 and "description" in desc.message


def test_es110_near_miss_once_the_author_has_replaced_them(tmp_path: Path) -> None:
    task = _scaffold(tmp_path, "feature")
    manifest = json.loads((task / "task.json").read_text())
    manifest["description"] = "clamp() gains an upper bound."
    (task / "task.json").write_text(json.dumps(manifest, indent=2))
    (task / "prompt.md").write_text("Add an upper bound to `clamp()` in `app/core.py`.\n")
    for tree in ("fixture", "solution"):
        core = task / tree / "app" / "core.py"
        core.write_text(core.read_text().replace(PLACEHOLDER_CODE, '"""Clamping."""'))
    assert [d for d in lint(task) if d.code == "ES110"] == []


def test_scaffold_prompts_differ_per_category_and_holdout_keeps_data_in_json(
    tmp_path: Path,
) -> None:
    prompts = set()
    for category in ("bug-fix", "feature", "refactor", "compaction", "recovery", "cost"):
        task = _scaffold(tmp_path, category)
        prompts.add((task / "prompt.md").read_text())
        cases = json.loads((task / "holdout" / "tests" / "clamp_cases.json").read_text())
        assert cases and all("expected" in c for c in cases)
        holdout = (task / "holdout" / "tests" / "test_holdout_core.py").read_text()
        assert "clamp_cases.json" in holdout and "assertIs(type(result), int)" in holdout
        allowed = json.loads((task / "task.json").read_text())["graders"][3]["args"]["allowed"]
        assert allowed == ["app/core.py"]
    assert len(prompts) == 6
