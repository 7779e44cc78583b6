"""ES4 — the directory and its fixture: draws, near-misses and the ES406 file-creating fix."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from tests.rules.conftest import FIXTURE, SOLUTION, TaskBuilder, good, lint
from tests.rules.helpers_es345 import absent, apply_fix, found, span, where

TREE = {"name": "endstate.evals.graders:tree_unchanged"}


def _fixture(changes: dict[str, str | bytes]) -> dict[str, str | bytes]:
    """The guide's fixture with files added or replaced."""
    return {**FIXTURE, **changes}


def _without(rel: str) -> dict[str, str | bytes]:
    return {k: v for k, v in FIXTURE.items() if k != rel}


def _permissioning(make_task: TaskBuilder, **kw):  # type: ignore[no-untyped-def]
    return make_task(
        good(category="permissioning", graders=[TREE], requires={"denied_calls": {"min": 1}}),
        **kw,
    )


def test_es401_no_fixture(make_task: TaskBuilder) -> None:
    task = make_task()
    shutil.rmtree(task / "fixture")
    [d] = found(task, "ES401")
    assert d.severity == "error"
    assert d.file == task / "task.json" and (d.line, d.column) == (1, 1)


def test_es401_runs_even_when_task_json_is_broken(make_task: TaskBuilder) -> None:
    task = make_task("{not json")
    shutil.rmtree(task / "fixture")
    found(task, "ES401")


def test_es402_no_solution(make_task: TaskBuilder) -> None:
    task = make_task(solution={})
    [d] = found(task, "ES402")
    assert d.severity == "error"
    assert where(d) == span(task, '"bug-fix"')


def test_es402_empty_solution(make_task: TaskBuilder) -> None:
    task = make_task(solution={})
    (task / "solution").mkdir()
    assert "empty" in found(task, "ES402")[0].message


def test_es402_near_miss_permissioning(make_task: TaskBuilder) -> None:
    task = _permissioning(make_task, solution={}, extra={"oracle.json": "[]"})
    absent(task, "ES402", "ES403", "ES404", "ES411")


def test_es403_permissioning_ships_solution(make_task: TaskBuilder) -> None:
    task = _permissioning(make_task, extra={"oracle.json": "[]"})
    [d] = found(task, "ES403")
    assert d.severity == "error"
    assert where(d) == span(task, '"permissioning"')


def test_es404_no_holdout(make_task: TaskBuilder) -> None:
    task = make_task(holdout={})
    [d] = found(task, "ES404")
    assert d.severity == "error"
    assert d.file == task / "task.json"


def test_es405_holdout_test_in_fixture(make_task: TaskBuilder) -> None:
    task = make_task(holdout={"tests/test_chunk.py": FIXTURE["tests/test_chunk.py"]})
    [d] = found(task, "ES405")
    assert d.severity == "error"
    assert d.file == task / "holdout" / "tests" / "test_chunk.py"
    assert "sees the held-out" in d.message


def test_es405_different_version_in_fixture(make_task: TaskBuilder) -> None:
    task = make_task(holdout={"chunker/core.py": "x = 1\n"})
    assert "replaced at grading" in found(task, "ES405")[0].message


def test_es405_near_miss_restaged_init(make_task: TaskBuilder) -> None:
    task = make_task(holdout={"tests/__init__.py": "", "tests/test_h.py": "import unittest\n"})
    absent(task, "ES405")


def test_es406_start_folder_without_init_and_fix(make_task: TaskBuilder) -> None:
    task = make_task(fixture=_without("tests/__init__.py"))
    [d] = found(task, "ES406")
    assert d.severity == "error"
    assert d.file == task / "fixture" / "tests" / "__init__.py"
    assert (d.line, d.column) == (1, 1)
    assert d.fix is not None and d.fix.safe
    apply_fix(d.fix)
    assert (task / "fixture" / "tests" / "__init__.py").read_bytes() == b""
    absent(task, "ES406")


def test_es406_near_misses(make_task: TaskBuilder) -> None:
    # the holdout supplies it
    task = make_task(
        fixture=_without("tests/__init__.py"),
        holdout={"tests/__init__.py": "", "tests/test_h.py": "import unittest\n"},
    )
    absent(task, "ES406")
    # start folder is the top-level folder: nothing to import
    data = good(id="no-top")
    data["graders"][0]["args"]["command"] = "python -m unittest discover -s tests -q"
    absent(make_task(data, fixture=_without("tests/__init__.py")), "ES406")
    # pytest needs no __init__.py
    data = good(id="pytest")
    data["graders"][0]["args"]["command"] = "python -m pytest -q tests"
    absent(make_task(data, fixture=_without("tests/__init__.py")), "ES406")


def test_es406_solution_supplies_it_no_safe_fix(make_task: TaskBuilder) -> None:
    task = make_task(
        fixture=_without("tests/__init__.py"),
        solution={"chunker/core.py": "x = 2\n", "tests/__init__.py": ""},
    )
    [d] = found(task, "ES406")
    assert d.fix is None and "solution/ adds it" in d.message


def test_es406_nested_folder_silently_skipped(make_task: TaskBuilder) -> None:
    task = make_task(fixture=_fixture({"tests/unit/test_more.py": "import unittest\n"}))
    [d] = found(task, "ES406")
    assert d.file == task / "fixture" / "tests" / "unit" / "__init__.py"
    assert "skips tests/unit/" in d.message


def test_es407_vcs_in_fixture(make_task: TaskBuilder) -> None:
    task = make_task(extra={"fixture/.git/HEAD": "ref: refs/heads/main\n"})
    [d] = found(task, "ES407")
    assert d.severity == "warning"
    assert d.file == task / "fixture" / ".git"


def test_es408_third_party_import(make_task: TaskBuilder) -> None:
    test = "import unittest\nimport os, pytest\n"
    task = make_task(fixture=_fixture({"tests/test_chunk.py": test}))
    [d] = found(task, "ES408")
    assert d.severity == "warning"
    assert d.file == task / "fixture" / "tests" / "test_chunk.py"
    assert (d.line, d.column, d.end_line, d.end_column) == (2, 12, 2, 18)


def test_es408_near_misses(make_task: TaskBuilder) -> None:
    test = (
        "from __future__ import annotations\n"
        "import json\nfrom chunker import chunk\nfrom . import helpers\n"
        "import helpers\n"
        "try:\n    import numpy\nexcept ImportError:\n    numpy = None\n"
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import mypy_extensions\n"
    )
    task = make_task(fixture=_fixture({"tests/test_chunk.py": test, "tests/helpers.py": "X = 1\n"}))
    absent(task, "ES408")


def test_es409_identical_solution_file(make_task: TaskBuilder) -> None:
    task = make_task(solution={"chunker/core.py": FIXTURE["chunker/core.py"]})
    [d] = found(task, "ES409")
    assert d.severity == "warning"
    assert d.file == task / "solution" / "chunker" / "core.py"


def test_es410_symlink_escapes(make_task: TaskBuilder) -> None:
    task = make_task()
    os.symlink("../../secret.txt", task / "fixture" / "chunker" / "data.txt")
    os.symlink("/etc/passwd", task / "holdout" / "pw")
    os.symlink("core.py", task / "fixture" / "chunker" / "alias.py")  # inside: fine
    hits = found(task, "ES410")
    assert {d.file for d in hits} == {
        task / "fixture" / "chunker" / "data.txt",
        task / "holdout" / "pw",
    }
    assert all(d.severity == "error" for d in hits)


def test_es411_permissioning_without_oracle(make_task: TaskBuilder) -> None:
    task = _permissioning(make_task, solution={})
    [d] = found(task, "ES411")
    assert d.severity == "warning"
    assert where(d) == span(task, '"permissioning"')


def test_es412_big_and_binary(make_task: TaskBuilder) -> None:
    task = make_task(
        extra={
            "fixture/data/big.txt": "a" * ((1 << 20) + 1),
            "fixture/data/blob.bin": b"\x89PNG\x00\x01",
            "fixture/data/ok.txt": "small text\n",
        }
    )
    hits = found(task, "ES412")
    assert sorted(d.file.name for d in hits) == ["big.txt", "blob.bin"]
    assert all(d.severity == "warning" for d in hits)


def test_es4_odd_folders_never_crash(make_task: TaskBuilder, tmp_path: Path) -> None:
    # fixture/ is a file, solution/ a symlink to a folder outside, holdout/ a dangling link
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "core.py").write_text("x = 1\n")
    task = make_task(solution={}, holdout={})
    shutil.rmtree(task / "fixture")
    (task / "fixture").write_text("not a folder\n")
    os.symlink(outside, task / "solution")
    os.symlink(tmp_path / "missing", task / "holdout")
    every = lint(task)
    assert not [d for d in every if d.code == "ES000"], [d.message for d in every]
    assert {"ES401", "ES404"} <= {d.code for d in every}


# ----- ES413 ----------------------------------------------------------------------------------


def test_es413_a_defect_that_adds_a_stray_file(make_task: TaskBuilder) -> None:
    task = make_task(
        extra={
            "defects/typo/chunker/cor.py": "def chunk(items, size):\n    return []\n",
            "defects/sound/chunker/core.py": "def chunk(items, size):\n    return [items]\n",
        }
    )
    [d] = [x for x in lint(task) if x.code == "ES413"]
    assert d.severity == "warning"
    assert d.file == task / "defects/typo/chunker/cor.py"
    assert "defects/typo/chunker/cor.py is in neither fixture/ nor solution/" in d.message


def test_es413_near_misses(make_task: TaskBuilder) -> None:
    # a defect over a fixture file, one over a file only the solution adds, and pruned caches
    task = make_task(
        solution={**SOLUTION, "chunker/extra.py": "X = 1\n"},
        extra={
            "defects/a/chunker/core.py": "def chunk(items, size):\n    return []\n",
            "defects/b/chunker/extra.py": "X = 2\n",
            "defects/b/chunker/__pycache__/extra.cpython-311.pyc": b"\0",
        },
    )
    assert not [x for x in lint(task) if x.code == "ES413"]


# ----- ES414: entries no sandbox can use ------------------------------------------------------


def _odd_names(task: Path, tree: str) -> None:
    """A name that is not UTF-8, a fifo, a 230-byte name, and a path over 3000 bytes."""
    root = task / tree
    root.mkdir(parents=True, exist_ok=True)
    with open(os.fsencode(root) + b"/notes-\xff.txt", "w") as fh:
        fh.write("x")
    os.mkfifo(root / "pipe")
    (root / ("n" * 230 + ".txt")).write_text("x")
    deep = root.joinpath(*["d" * 200] * 16)
    deep.mkdir(parents=True)
    (deep / "f.txt").write_text("x")


def test_es414_every_kind_in_every_tree(make_task: TaskBuilder) -> None:
    """Each tree, each kind, one finding each (nothing under a reported folder again); a
    fifo is never opened (lint would hang on it)."""
    task = make_task()
    for tree in ("fixture", "holdout", "solution", "defects/breaks"):
        _odd_names(task, tree)
    hits = found(task, "ES414")
    for tree in ("fixture", "holdout", "solution", "defects/breaks"):
        mine = [d.message for d in hits if d.message.startswith(f"{tree}/")]
        assert len(mine) == 4, mine
        assert any("notes-\\xff.txt" in m and "not UTF-8" in m for m in mine)
        assert any(m.startswith(f"{tree}/pipe:") and "fifo" in m for m in mine)
        assert any("is 234 bytes" in m for m in mine)
        assert any("path is" in m and "bytes" in m for m in mine)
    assert all(d.severity == "error" and d.file == task / "task.json" for d in hits)


def test_es414_near_misses(make_task: TaskBuilder) -> None:
    """UTF-8 names of any script, a 200-byte name, links (in the tree or dangling) and a
    path just under the limit are all fine."""
    task = make_task()
    root = task / "fixture"
    (root / "données-числа-数据.txt").write_text("x")
    (root / ("n" * 200)).write_text("x")
    os.symlink("README.md", root / "link.md")
    os.symlink("missing.txt", root / "dangling.txt")
    deep = root.joinpath(*["d" * 199] * 14)
    deep.mkdir(parents=True)
    absent(task, "ES414")


def test_es414_python_in_another_encoding(make_task: TaskBuilder) -> None:
    """A Python file of the task that declares an encoding other than UTF-8 is two programs
    (issue 42): one finding per file; a UTF-8 declaration, a BOM, a declaration on line 3
    and the same text in a file Python does not import are fine."""
    task = make_task()
    hidden = "# -*- coding: utf-7 -*-\nx = 1\n# +AAo-x = 2\n"
    for tree in ("fixture", "holdout", "solution"):
        (task / tree / "hidden.py").write_text(hidden)
    (task / "fixture" / "latin.py").write_bytes(b"#!/usr/bin/env python\n# coding: latin-1\n")
    (task / "fixture" / "notes.txt").write_text(hidden)
    (task / "fixture" / "declared.py").write_text("# -*- coding: utf-8 -*-\nx = 1\n")
    (task / "fixture" / "bom.py").write_bytes(b"\xef\xbb\xbfx = 1\n")
    (task / "fixture" / "late.py").write_text("x = 1\n\n# coding: utf-7\n")
    hits = sorted(d.message for d in found(task, "ES414"))
    assert [m.split(":")[0] for m in hits] == [
        "fixture/hidden.py", "fixture/latin.py", "holdout/hidden.py", "solution/hidden.py"
    ], hits
    assert all("declares the source encoding" in m for m in hits)
    assert "'utf-7'" in hits[0] and "'iso8859-1'" in hits[1]
