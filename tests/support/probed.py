"""A suite with every input a proof reads beyond its task folders, for the executor tests.

Why here: the differential tests of ``--executor ray`` (tests/executors) prove it locally and
on a cluster and compare every finding; it must hold what a node can miss: the suite's saved
probes (each task's reference solution, saved as ``redteam --save-probe`` saves an exploit:
replayed on its own task, the graders accept it, ES906), tasks with defects, a suite grader
module with a helper module it imports, and a lint configuration above the suite that
changes a finding (ES311 made an error).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from endstate_author.probes.diff import changes
from endstate_author.probes.store import save_probe
from endstate_harness.task import load_task
from tests.support.tasks import TaskBuilder, good

REPO = Path(__file__).resolve().parents[2]
SHIPPED = ("fix-semver-precedence", "add-temperature-units")
"""Two shipped tasks with defects, quick to grade."""
CONFIG = '[tool.endstate-author]\nseverity = { ES311 = "error" }\n'
HOUSE_GRADERS = (
    '"""The suite\'s own grader, with a helper module it imports."""\n\n'
    "from endstate_harness.graders.reference import files_unchanged\n"
    "from house_helpers import KEPT\n\n\n"
    "def readme_kept(sandbox, *, name: str = \"\"):\n"
    '    """The fixture\'s tests are left as they were."""\n'
    "    return files_unchanged(sandbox, paths=list(KEPT), name=name)\n"
)
HOUSE_HELPERS = 'KEPT = ("tests/test_chunk.py",)\n'


def _files(root: Path) -> dict[str, bytes]:
    if not root.is_dir():
        return {}
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


def build_probed_suite(base: Path) -> Path:
    """``base/pyproject.toml`` (the configuration) and ``base/suite`` (returned): the shipped
    tasks of :data:`SHIPPED`, one built task graded in process (ES311), and ``probes/``."""
    suite = base / "suite"
    suite.mkdir(parents=True)
    (base / "pyproject.toml").write_text(CONFIG, encoding="utf-8")
    for name in SHIPPED:
        shutil.copytree(REPO / "tasks" / name, suite / name, symlinks=True)
    built = good(id="chunk-in-process")
    built["graders"] = [*built["graders"], {"name": "house_graders:readme_kept"}]
    TaskBuilder(suite)(built, name="chunk-in-process")
    (suite / "house_graders.py").write_text(HOUSE_GRADERS, encoding="utf-8")
    (suite / "house_helpers.py").write_text(HOUSE_HELPERS, encoding="utf-8")
    for root in sorted(p.parent for p in suite.glob("*/task.json")):
        task = load_task(root)
        fixture = _files(task.fixture)
        end = {**fixture, **_files(root / "solution")}
        save_probe(task, f"solution-of-{root.name}", changes(fixture, end), test_dir="tests")
    return suite
