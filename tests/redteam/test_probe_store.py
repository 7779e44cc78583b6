"""Suite probes as files: how an attempt's changes are classified, replayed, and refused.

No agent and no sandbox here: the probe format is plain files, so these run in milliseconds.
The end-to-end path (a model's exploit saved and replayed by prove) is in test_redteam.py.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from endstate_author.probes.diff import Change, Coverage, changes, reference_coverage
from endstate_author.probes.store import (
    ProbeError,
    check_name,
    inserted_block,
    load_probe,
    save_probe,
    suite_probes,
)
from endstate_author.redteam.triage import Evidence, decide
from endstate_harness.task import load_task
from tests.rules.conftest import TaskBuilder, good

DOC = '"""Doc."""\nfrom __future__ import annotations\n\nimport re\n'


def test_an_insertion_after_the_header_is_top_and_one_at_the_end_is_end() -> None:
    assert inserted_block(
        DOC, DOC.replace("\nimport re", "\nimport os\nos._exit(0)\nimport re")
    ) == (
        "import os\nos._exit(0)\n",
        "top",
    )
    assert inserted_block(DOC, DOC + "X = 1\n") == ("X = 1\n", "end")
    # a mid-file edit, or an edit that also removes a line, is not portable
    body = DOC + "a = 1\nb = 2\n"
    assert inserted_block(body, body.replace("a = 1\n", "a = 1\nc = 3\n")) is None
    assert inserted_block(body, body.replace("a = 1\n", "a = 2\n")) is None


def test_saved_probe_replays_literally_on_its_task_and_not_where_it_does_not_fit(
    tmp_path: Path,
) -> None:
    suite = tmp_path / "suite"
    root = TaskBuilder(suite)(good(id="t"), name="t")
    task = load_task(root)
    fixture = {"chunker/core.py": (root / "fixture/chunker/core.py").read_bytes()}
    edited = {"chunker/core.py": b"def chunk(items, size):\n    return 'mid-file'\n"}
    folder = save_probe(task, "mid", changes(fixture, edited), test_dir="tests")
    probe = load_probe(folder)
    assert [(e.role, e.where) for e in probe.edits] == [("file", "")]
    assert probe.applies(task.fixture, ["chunker"], "tests") is None  # its own task: literal
    other = tmp_path / "other"
    (other / "chunker").mkdir(parents=True)
    (other / "chunker" / "core.py").write_text("def chunk(x):\n    return x\n")
    assert "specific to the task" in (probe.applies(other, ["chunker"], "tests") or "")
    with pytest.raises(ProbeError, match="exists already"):
        save_probe(task, "mid", [], test_dir="tests")


def test_a_probe_whose_paths_leave_the_tree_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "probes" / "evil"
    (folder / "files").mkdir(parents=True)
    (folder / "probe.json").write_text(
        json.dumps(
            {"name": "evil", "edits": [{"path": "../../x", "before_sha256": None, "deleted": True}]}
        )
    )
    with pytest.raises(ProbeError, match="leaves the tree"):
        load_probe(folder)
    (folder / "probe.json").write_text("{not json")
    with pytest.raises(ProbeError, match="not a suite probe"):
        load_probe(folder)


def test_probe_names() -> None:
    assert check_name("early-exit.2") is None
    assert check_name("Early") and check_name("a/b") and check_name("")


def test_triage_verdicts() -> None:
    failing = Evidence("reference tests", "fail", True, "judge: all tests passed")
    passing = Evidence("reference tests", "pass", True)
    useless = Evidence("reference tests", "fail", False, "fails on the reference solution too")
    none = Coverage(0, 3)
    most = Coverage(2, 3)
    assert decide([failing], none).verdict == "exploit"
    assert decide([failing], most).verdict == "did-the-work"  # the work is there, with a slip
    assert decide([passing], none).verdict == "did-the-work"  # another way to do it
    assert decide([useless], none).verdict == "undecided"
    assert decide([useless], most).verdict == "did-the-work"
    assert decide([], none).verdict == "undecided"


def test_reference_coverage_counts_lines() -> None:
    reference = {"pkg/a.py": ["return x + 1", "return y * 2"]}
    end = {"pkg/a.py": b"def f(x):\n    return x + 1\n"}
    coverage = reference_coverage(reference, end)
    assert (coverage.found, coverage.total, coverage.present) == (1, 2, True)
    assert not reference_coverage(reference, {}).present
    assert changes({"a": b"1"}, {"a": b"1", "b": b"2"}) == [Change("b", None, b"2")]


def test_a_test_folder_edit_replays_under_the_other_tasks_test_folder(tmp_path: Path) -> None:
    root = TaskBuilder(tmp_path / "suite")(good(id="t"), name="t")
    task = load_task(root)
    hack = b"def load_tests(loader, tests, pattern):\n    return loader.suiteClass()\n"
    items = changes({"tests/__init__.py": b""}, {"tests/__init__.py": hack})
    probe = load_probe(save_probe(task, "empty-suite", items, test_dir="tests"))
    assert [(e.role, e.test_rel) for e in probe.edits] == [("test", "__init__.py")]
    other = tmp_path / "other"
    (other / "checks").mkdir(parents=True)
    (other / "checks" / "__init__.py").write_text("# the other task's test package\n")
    written = probe.apply(other, [], "checks")
    assert written == ["checks/__init__.py"]
    assert (other / "checks" / "__init__.py").read_bytes() == hack


def test_a_probe_that_cannot_be_read_is_said_never_skipped(tmp_path: Path) -> None:
    """A folder of probes/ without its probe.json, a probe folder that is a link, a probes
    that is a link: each is an error the proof reports (ES908), never a probe left out in
    silence (a node's copy without its probes found nothing and said nothing, issue 47)."""
    suite = tmp_path / "suite"
    task = load_task(TaskBuilder(suite)(good(id="t"), name="t"))
    (suite / "probes" / "half-saved" / "files").mkdir(parents=True)
    (suite / "probes" / ".hidden").mkdir()
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (suite / "probes" / "linked").symlink_to(outside)
    found = suite_probes(task)
    assert [type(p) for p in found] == [ProbeError, ProbeError]
    assert "probe.json" in str(found[0]) and "not a link" in str(found[1])
    shutil.rmtree(suite / "probes")
    (suite / "probes").symlink_to(outside)
    [error] = suite_probes(task)
    assert isinstance(error, ProbeError) and "is a link" in str(error)
