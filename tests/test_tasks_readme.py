"""tasks/README.md says what the shipped suite is: its tasks, their categories, their graders.

The table of which task uses which grader is generated from the tasks
(``python scripts/tasks_readme.py --write``); the hand-written tables are compared with the
suite here, so a task added, renamed or regraded without its README fails with what to change.
"""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TASKS = ROOT / "tasks"
README = TASKS / "README.md"
NUMBERS = "zero one two three four five six seven eight nine ten eleven twelve thirteen " \
    "fourteen fifteen sixteen seventeen eighteen nineteen twenty".split()  # fmt: skip


def _script():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("tasks_readme", ROOT / "scripts/tasks_readme.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _suite() -> dict[str, dict]:  # type: ignore[type-arg]
    out = {}
    for path in sorted(TASKS.glob("*/task.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        out[data.get("id", path.parent.name)] = data
    return out


def _section(title: str) -> str:
    text = README.read_text(encoding="utf-8")
    start = text.index(f"## {title}")
    end = text.find("\n## ", start + 1)
    return text[start : end if end > 0 else len(text)]


def _rows(section: str) -> list[list[str]]:
    rows = []
    for line in section.splitlines():
        if line.startswith("| ") and not line.startswith("| ---"):
            rows.append([c.strip() for c in line.strip().strip("|").split(" | ")])
    return rows


def test_generated_graders_table_is_current() -> None:
    script = _script()
    text = README.read_text(encoding="utf-8")
    assert script.rendered(text, TASKS) == text, (
        "tasks/README.md's graders table is stale: python scripts/tasks_readme.py --write"
    )


def test_generated_table_changes_with_a_task(tmp_path: Path) -> None:
    """The check can fail: a suite whose task gains a grader renders another table."""
    script = _script()
    suite = tmp_path / "tasks"
    for task, data in _suite().items():
        (suite / task).mkdir(parents=True)
        if task == "fix-help-text-wrap":
            data["graders"].append({"name": "endstate.evals.graders:tree_unchanged"})
        (suite / task / "task.json").write_text(json.dumps(data))
    text = README.read_text(encoding="utf-8")
    changed = script.rendered(text, suite)
    assert changed != text
    assert "`changed_paths_within(allowed=[helpfmt/wrap.py])` `tree_unchanged()` |" in changed


def test_grader_prose_names_exactly_the_graders_the_suite_uses() -> None:
    used = {g["name"] for data in _suite().values() for g in data["graders"]}
    described = {
        re.match(r"`([^`]+)`", row[0]).group(1)  # type: ignore[union-attr]
        for row in _rows(_section("How the tasks are graded"))
        if row[0].startswith("`") and ":" in row[0].split("`")[1]
    }
    assert described == used, (
        f"described but unused: {sorted(described - used)}; "
        f"used but not described: {sorted(used - described)}"
    )


def test_task_table_and_count_match_the_suite() -> None:
    suite = _suite()
    rows = _rows(_section("The tasks"))[1:]  # the header row first
    listed = {row[0].strip("`"): row[1] for row in rows}
    actual = {task: data.get("category", "bug-fix") for task, data in suite.items()}
    assert listed == actual
    opening = README.read_text(encoding="utf-8").split("\n\n")[1]
    assert opening.lower().startswith(f"{NUMBERS[len(suite)]} endstate tasks"), opening
    per_category: dict[str, int] = {}
    for category in actual.values():
        per_category[category] = per_category.get(category, 0) + 1
    assert "at least two for every category" in opening and min(per_category.values()) >= 2
