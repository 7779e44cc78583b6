"""Deep trees and swapped links against the host's walks of a sandbox's tree (issue 42).

A tree 1,100 folders deep (past Python's recursion limit) and one whose paths are longer than
``PATH_MAX`` (4,096 bytes, which no path-based call can open), left in the end state by the
agent or made by the code under test in its grading copy, must not crash the harness: every
walk (the seal's ownership grant and cache cleanup, the snapshot, the refresh of the grading
copy, the removal of the scratch folder) runs over directory descriptors, without recursion.
And a name the sandbox swaps for a link between two steps of the host's read or write is
recorded as a link or refused, never followed: a second process flips names for real while
the host reads and writes.

The CLI tests run ``eval`` (oracle) and ``prove`` over a suite holding such tasks, locally and
in Docker, and check the machine afterwards: every task has its verdict (none of them an
error, the suite not aborted), no traceback, and nothing left in the run's own TMPDIR.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from endstate_harness.errors import EndStateError, PathEscapeError
from endstate_harness.sandbox import tree
from endstate_harness.sandbox.local import LocalSandbox
from endstate_harness.sandbox.scratch import SCRATCH_PREFIX
from endstate_harness.sandbox.snapshot import Entry, Snapshot, read_snapshot
from tests.reliability.conftest import CLI, private_env, tree_digest
from tests.rules.conftest import GOOD_MANIFEST, SOLUTION, TaskBuilder

DEEP = 1100
"""Past the recursion limit (1,000) of every recursive walk on Python 3.11."""
PAST_PATH_MAX = 2100
"""``d/`` 2,100 times: 4,200 bytes, past ``PATH_MAX`` (4,096)."""

BUILD = (
    "import os\n"
    "for _ in range({depth}):\n"
    "    os.mkdir('d'); os.chdir('d')\n"
    "open('bottom.txt', 'w').write('deep')\n"
    "open('stale.pyc', 'wb').write(b'x')\n"
    "os.mkdir('__pycache__'); open('__pycache__/m.cpython-311.pyc', 'wb').write(b'x')\n"
    "os.mkdir('locked'); open('locked/f', 'w').write('x'); os.chmod('locked', 0o500)\n"
)
"""What the code under test runs to make the tree: a loop (``os.makedirs`` recurses too)."""


def _deep_rel(depth: int, name: str) -> str:
    return "d/" * depth + name


# ----------------------------------------------------------------------------- the seal


@pytest.mark.parametrize("depth", [DEEP, PAST_PATH_MAX])
def test_seal_refresh_and_close_of_a_deep_end_state(tmp_path: Path, depth: int) -> None:
    """The code under test builds the tree in the live folder; the seal reads it whole (the
    compiled caches deleted, the locked folder opened), a grading command finds it rewritten
    in its copy, and closing leaves nothing in the scratch root."""
    fixture = tmp_path / "fixture"
    (fixture / "pkg").mkdir(parents=True)
    (fixture / "pkg" / "m.py").write_text("X = 1\n")
    scratch = tmp_path / "scratch"
    with LocalSandbox(fixture, scratch_root=scratch) as box:
        made = box.run(f"python3 -c \"{BUILD.format(depth=depth)}\"", timeout_s=120)
        assert made.exit_code == 0, made.stderr
        box.seal()
        assert box.end_state_problem() is None
        snap = box.sealed_snapshot()
        assert snap is not None
        assert snap.read_bytes(_deep_rel(depth, "bottom.txt")) == b"deep"
        assert snap.read_bytes(_deep_rel(depth, "locked/f")) == b"x"
        assert not snap.exists(_deep_rel(depth, "stale.pyc"))
        assert not snap.exists(_deep_rel(depth, "__pycache__"))
        # the grading copy the next command runs on holds the whole tree again
        probe = (f"import os\nfor _ in range({depth}): os.chdir('d')\n"
                 "print(open('bottom.txt').read())")
        again = box.run(f"python3 -c \"{probe}\"", timeout_s=120)
        assert again.exit_code == 0 and again.stdout.strip() == "deep", again.stderr
    assert [p.name for p in scratch.iterdir() if p.name.startswith(SCRATCH_PREFIX)] == []


def test_remove_tree_of_a_deep_tree_with_locked_folders_and_links_out(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    (outside / "dir").mkdir(parents=True)
    (outside / "keep.txt").write_text("keep")
    before = tree_digest(outside)
    doomed = tmp_path / "doomed"
    doomed.mkdir()
    fd = os.open(doomed, os.O_RDONLY | os.O_DIRECTORY)
    for level in range(PAST_PATH_MAX):
        os.mkdir("d", dir_fd=fd)
        os.symlink(str(outside), "out", dir_fd=fd)
        os.symlink(str(outside / "keep.txt"), "file-out", dir_fd=fd)
        inner = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        if level % 97 == 0:
            os.chmod(fd, 0o500)  # read-only folders on the way: the removal opens them
        os.close(fd)
        fd = inner
    os.close(fd)
    tree.remove_tree(doomed)
    assert not os.path.lexists(doomed)
    assert tree_digest(outside) == before


def test_hash_and_copy_agree_with_the_snapshot_at_any_depth(tmp_path: Path) -> None:
    """The descriptor walks keep the order the hash is defined by: the tree on disk, its
    snapshot and a copy of it hash the same."""
    src = tmp_path / "src"
    for top in ("a", "a-b", "b"):
        folder = src / top
        for depth in range(3):
            folder = folder / f"n{depth}"
            folder.mkdir(parents=True, exist_ok=True)
            (folder / "f.txt").write_text(f"{top}{depth}")
    fd = os.open(src / "a", os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(PAST_PATH_MAX):
        os.mkdir("d", dir_fd=fd)
        inner = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = inner
    os.close(fd)
    on_disk = tree.hash_tree(src)
    snap = read_snapshot(src)
    assert snap.tree_hash() == on_disk
    tree.copy_tree(src, tmp_path / "copy")
    assert tree.hash_tree(tmp_path / "copy") == on_disk
    snap.write_to(tmp_path / "written")
    assert tree.hash_tree(tmp_path / "written") == on_disk
    for made in ("src", "copy", "written"):  # pytest's own cleanup of tmp_path recurses
        tree.remove_tree(tmp_path / made)


# ----------------------------------------------------------------------------- swapped links

SWAPPER = r"""
import os, sys, time
live, stage, target, kind = sys.argv[1:5]
names = sys.argv[5:]
i = 0
end = time.monotonic() + 60
while time.monotonic() < end:
    name = names[i % len(names)]
    i += 1
    here = os.path.join(live, name)
    away = os.path.join(stage, "a%d" % i)
    try:
        os.rename(here, away)  # the real file or folder out of the way
    except OSError:
        pass
    link = os.path.join(stage, "l%d" % i)
    try:
        os.symlink(target, link)
        os.rename(link, here)  # a link in its place, at once
    except OSError:
        pass
    time.sleep(0.002)  # the link stays a moment: long enough for a walk to meet it
    if kind == "flip" and (os.path.isdir(away) or os.path.isfile(away)):
        try:
            os.rename(away, here)  # and back (over the link: rename replaces it)
        except OSError:
            pass
"""
"""A second process that keeps swapping names in ``live`` for links to ``target`` (moving the
real entry aside and, with ``flip``, back again), for real, while the host reads or writes."""


def _swapper(live: Path, stage: Path, target: Path, kind: str, names: list[str]
             ) -> subprocess.Popen[bytes]:
    stage.mkdir(exist_ok=True)
    return subprocess.Popen([sys.executable, "-c", SWAPPER, str(live), str(stage), str(target),
                             kind, *names])


def test_a_read_never_follows_a_name_swapped_for_a_link(tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "f.txt").write_text("HOST-SECRET")
    (secret / "inner.txt").write_text("HOST-SECRET")
    live = tmp_path / "live"
    live.mkdir()
    names = []
    for i in range(24):
        (live / f"f{i}.txt").write_text("mine")
        (live / f"dir{i}").mkdir()
        (live / f"dir{i}" / "inner.txt").write_text("mine")
        names += [f"f{i}.txt", f"dir{i}"]
    swapper = _swapper(live, tmp_path / "stage", secret / "f.txt", "flip", names[0::2])
    swapper_dirs = _swapper(live, tmp_path / "stage2", secret, "flip", names[1::2])
    reads = refused = 0
    try:
        deadline = time.monotonic() + 4.0
        while time.monotonic() < deadline:
            try:
                snap = read_snapshot(live)
            except EndStateError:
                refused += 1  # a name that changed under the read: refused, with the reason
                continue
            reads += 1
            leaked = [rel for rel, e in snap.entries.items()
                      if e.kind == "f" and b"HOST-SECRET" in e.data]
            assert leaked == [], f"host files read into the snapshot: {leaked}"
    finally:
        swapper.kill()
        swapper_dirs.kill()
        swapper.wait()
        swapper_dirs.wait()
    assert reads + refused > 0
    print(f"{reads} reads, {refused} refused while names were swapped")


def test_a_refresh_never_writes_through_a_folder_swapped_for_a_link(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    dst = tmp_path / "live"
    snap = Snapshot()
    snap.entries["pkg"] = Entry("d")
    for i in range(40):
        snap.entries[f"pkg/m{i}.py"] = Entry("f", b"X = 1\n")
    swapper = _swapper(dst, tmp_path / "stage", outside, "park", ["pkg"])
    writes = refused = 0
    try:
        deadline = time.monotonic() + 4.0
        while time.monotonic() < deadline:
            try:
                snap.write_to(dst)
                writes += 1
            except (PathEscapeError, OSError):
                refused += 1
            assert list(outside.iterdir()) == [], "the refresh wrote through a link"
    finally:
        swapper.kill()
        swapper.wait()
    print(f"{writes} writes, {refused} refused while pkg was swapped for a link")


# ----------------------------------------------------------------------------- one task's fault


class _FaultyClose(LocalSandbox):
    """A real local sandbox whose backend raises when it is closed: a harness fault no task
    can be blamed for, as RecursionError in the scratch folder's removal was."""

    def _close_backend(self) -> None:
        super()._close_backend()
        raise RuntimeError("injected: the backend could not be closed")


class _Maker:
    """The sandbox maker ``run_task`` takes (a label and ``make``): the faulty sandbox for the
    task whose fixture holds ``FAULT``, a plain local one for the others."""

    label = "local"

    def __init__(self, scratch: Path) -> None:
        self.scratch = scratch

    def make(self, fixture: Path) -> LocalSandbox:
        kind = _FaultyClose if (fixture / "FAULT").exists() else LocalSandbox
        return kind(fixture, scratch_root=self.scratch)


def test_a_harness_exception_is_that_tasks_error_and_the_suite_goes_on(tmp_path: Path) -> None:
    from endstate_harness.agent.oracle import oracle_provider
    from endstate_harness.runner import run_suite
    from endstate_harness.task import load_task

    builder = TaskBuilder(tmp_path / "suite")
    tasks = []
    for task_id in ("a-before", "b-faulty", "c-after"):
        manifest = copy.deepcopy(GOOD_MANIFEST)
        manifest["id"] = task_id
        root = builder(manifest, name=task_id)
        if task_id == "b-faulty":
            (root / "fixture" / "FAULT").write_text("")
        tasks.append(load_task(root))
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    suite = run_suite(tasks, provider_factory=oracle_provider, sandbox=_Maker(scratch))
    by_id = {r.task_id: r for r in suite.results}
    assert list(by_id) == ["a-before", "b-faulty", "c-after"]
    assert by_id["a-before"].passed and by_id["c-after"].passed
    faulty = by_id["b-faulty"]
    assert not faulty.passed and faulty.error and "injected" in faulty.error
    # the faulty task's scratch folder went too (the warm interpreters' folder is the
    # process's, removed at its exit)
    assert [p.name for p in scratch.iterdir() if p.name.startswith(SCRATCH_PREFIX)] == []


# ----------------------------------------------------------------------------- the CLI


def _deep_suite(base: Path) -> Path:
    """A sound task, two tasks whose agent leaves a deep tree (1,100 deep; past PATH_MAX) in
    the end state, and one whose code under test builds one in every grading copy."""
    builder = TaskBuilder(base)
    for task_id in ("plain",):
        manifest: dict[str, Any] = copy.deepcopy(GOOD_MANIFEST)
        manifest["id"] = task_id
        builder(manifest, name=task_id)
    for task_id, depth in (("deep-end-state", DEEP), ("deeper-than-path-max", PAST_PATH_MAX)):
        manifest = copy.deepcopy(GOOD_MANIFEST)
        manifest["id"] = task_id
        root = builder(manifest, name=task_id)
        build = BUILD.format(depth=depth)
        oracle = [
            [{"tool": "write", "args": {"path": "chunker/core.py",
                                        "content": SOLUTION["chunker/core.py"]}}],
            [{"tool": "bash", "args": {
                "command": f"mkdir -p chunker/deep && cd chunker/deep && python3 -c \"{build}\""
            }}],
        ]
        (root / "oracle.json").write_text(json.dumps(oracle), encoding="utf-8")
    manifest = copy.deepcopy(GOOD_MANIFEST)
    manifest["id"] = "deep-grading-copy"
    code = (
        "import os as _os\n_here = _os.getcwd()\n_os.makedirs('build', exist_ok=True)\n"
        f"_os.chdir('build')\nfor _ in range({DEEP}):\n"
        "    if not _os.path.isdir('d'):\n        _os.mkdir('d')\n    _os.chdir('d')\n"
        "_os.chdir(_here)\n"
    )
    builder(manifest, name="deep-grading-copy",
            solution={"chunker/core.py": code + SOLUTION["chunker/core.py"]})
    return base


def _run(argv: list[str], base: Path, timeout: float) -> tuple[int, str, str]:
    env = private_env(base, uuid.uuid4().hex)
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=timeout,
                          cwd=base, check=False)
    return proc.returncode, proc.stdout, proc.stderr


def _left_in(base: Path) -> list[str]:
    return sorted(p.name for p in (base / "tmp").iterdir())


def _no_crash(stderr: str) -> None:
    assert "internal error" not in stderr, stderr[-3000:]
    assert "Traceback" not in stderr, stderr[-3000:]
    assert "RecursionError" not in stderr, stderr[-3000:]


def _backend_args(backend: str, request: pytest.FixtureRequest) -> list[str]:
    if backend == "docker":
        image = request.getfixturevalue("sandbox_image")
        return ["--sandbox", "docker", "--image", image]
    return ["--sandbox", "local"]


@pytest.mark.parametrize("backend", ["local", pytest.param("docker", marks=pytest.mark.docker)])
def test_eval_grades_every_task_of_a_suite_with_deep_trees(
    tmp_path: Path, backend: str, request: pytest.FixtureRequest
) -> None:
    args = _backend_args(backend, request)
    suite = _deep_suite(tmp_path / "suite")
    out = tmp_path / "out"
    base = tmp_path / "run"
    code, _stdout, stderr = _run(
        [*CLI, "eval", str(suite), "--provider", "oracle", *args, "-q", "--out", str(out)],
        base, timeout=600,
    )
    _no_crash(stderr)
    results = json.loads((out / "results.json").read_text())
    verdicts = {r["task_id"]: (r["passed"], r["error"], r["reason"]) for r in results["results"]}
    assert set(verdicts) == {"plain", "deep-end-state", "deeper-than-path-max",
                             "deep-grading-copy"}
    # every one is the sound task solved (its oracle writes the fix): each passes, none errs
    assert all(error is None for _p, error, _r in verdicts.values()), verdicts
    assert all(passed is True for passed, _e, _r in verdicts.values()), verdicts
    assert code in (0, 1), stderr[-2000:]
    assert _left_in(base) == []


@pytest.mark.parametrize("backend", ["local", pytest.param("docker", marks=pytest.mark.docker)])
def test_prove_assesses_tasks_with_deep_trees(
    tmp_path: Path, backend: str, request: pytest.FixtureRequest
) -> None:
    args = _backend_args(backend, request)
    suite = _deep_suite(tmp_path / "suite")
    for name in ("plain", "deeper-than-path-max"):  # prove's cost: the two kinds are enough
        tree.remove_tree(suite / name)
    base = tmp_path / "run"
    code, stdout, stderr = _run(
        [*CLI, "prove", str(suite), *args, "--no-cache", "-o", "json"], base, timeout=900,
    )
    _no_crash(stderr)
    report = json.loads(stdout)
    unassessed = [d["message"][:300] for d in report["diagnostics"] if d["code"] == "ES908"]
    assert unassessed == []
    assert " 0 unassessed" in stderr and "unassessed" not in stderr.replace(" 0 unassessed", "")
    assert code in (0, 1), stderr[-2000:]
    assert _left_in(base) == []
