"""lint's persistent cache: every input a finding depends on re-lints its task when it changes,
an unchanged task answers from the cache, and cached output is the uncached output, byte for
byte, in every format (through the command line's fast path, too)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from endstate_author.engine.diagnostics import Diagnostic
from endstate_author.lint import cache as lintcache
from endstate_author.lint import index as lintindex
from endstate_author.lint import run as lint_module
from endstate_author.lint.cache import LintCache
from endstate_author.lint.run import lint_paths
from tests.support.tasks import FIXTURE, HOLDOUT, TaskBuilder, good


def linted(paths: list[Path], cache: LintCache | None, **options: object) -> list[Diagnostic]:
    return lint_paths(paths, cache=cache, **options).diagnostics  # type: ignore[arg-type]


def same_as_uncached(suite: Path, cache_dir: Path, **options: object) -> list[Diagnostic]:
    """Lint through the cache (twice: filling, then answering) and check both runs find
    exactly what an uncached lint finds; returns the findings."""
    fresh = linted([suite], None, **options)
    for _ in range(2):
        cached = linted([suite], LintCache(cache_dir), **options)
        assert cached == fresh
    return fresh


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    builder = TaskBuilder(tmp_path / "suite")
    builder()
    builder(good(id="second"), name="second")
    builder(good(id="typo", category="bugfix"), name="typo")
    return tmp_path / "suite"


def test_an_unchanged_suite_answers_from_the_cache(suite: Path, tmp_path: Path) -> None:
    cache_dir = tmp_path / "cache"
    fresh = same_as_uncached(suite, cache_dir)
    assert any(d.code.startswith("ES1") for d in fresh)
    cache = LintCache(cache_dir)
    assert linted([suite], cache) == fresh
    assert (cache.hits, cache.misses) == (4, 0)  # three tasks and the suite-wide rules
    one = LintCache(cache_dir)
    linted([suite / "typo"], one)
    assert one.hits >= 1  # the same task named alone has the same key


CHANGES = {
    "task.json": lambda t: (t / "task.json").write_text(
        json.dumps(good(id="task-1", max_steps="9"))
    ),
    "a fixture file's content": lambda t: (t / "fixture/tests/test_chunk.py").write_text(
        "import numpy\n" + FIXTURE["tests/test_chunk.py"]  # type: ignore[operator]
    ),
    "a holdout file added": lambda t: (t / "holdout/tests/test_more.py").write_text(
        "import numpy\n" + HOLDOUT["tests/test_holdout_chunk.py"]  # type: ignore[operator]
    ),
    "a holdout file removed": lambda t: (t / "holdout/tests/test_holdout_chunk.py").unlink(),
    "prompt.md": lambda t: (t / "prompt.md").write_text(""),
    "a solution file removed": lambda t: (t / "solution/chunker/core.py").unlink(),
    "a new folder": lambda t: (t / "fixture/tests/data").mkdir(),
}


def settle() -> None:
    """Let the file system's clock move on (see ``trusting``)."""
    time.sleep(0.05)


@pytest.fixture(params=["racy", "trusted"])
def index_mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run a test twice: with the real racy window (files written in the test are always
    hashed again), and with a 10 ms one, so that the suite's stat index answers for files
    written 50 ms (``settle``) before a lint, as it does for files older than 2 s."""
    if request.param == "trusted":
        monkeypatch.setattr(lintindex, "RACY_NS", 10_000_000)
    return str(request.param)


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_each_kind_of_input_relints_its_task(change: str, index_mode: str, tmp_path: Path) -> None:
    builder = TaskBuilder(tmp_path / "suite")
    task = builder()
    builder(good(id="other"), name="other")
    suite = tmp_path / "suite"
    cache_dir = tmp_path / "cache"
    settle()
    before = same_as_uncached(suite, cache_dir)
    answered = LintCache(cache_dir)
    assert linted([suite], answered) == before
    if index_mode == "trusted":
        assert answered.unread == 2  # both tasks known unchanged without reading a file
    settle()
    CHANGES[change](task)
    cache = LintCache(cache_dir)
    after = linted([suite], cache)
    assert after == linted([suite], None)
    assert cache.hits == 1 and cache.misses == 2  # "other" answered; the task and the suite not
    if change != "a new folder":  # an empty folder changes the key, not the findings
        assert after != before, "the change was meant to change the findings"


def test_a_rewrite_that_keeps_size_and_time_is_still_seen(index_mode: str, tmp_path: Path) -> None:
    builder = TaskBuilder(tmp_path / "suite")
    task = builder()
    suite = tmp_path / "suite"
    settle()
    same_as_uncached(suite, tmp_path / "cache")
    test_file = task / "fixture/tests/test_chunk.py"
    old = test_file.stat()
    text = test_file.read_text()
    test_file.write_text("import numpy" + text[len("import numpy") :])  # same size
    os.utime(test_file, ns=(old.st_atime_ns, old.st_mtime_ns))  # same modification time
    after = linted([suite], LintCache(tmp_path / "cache"))
    assert after == linted([suite], None) and any(d.code == "ES408" for d in after)


def test_a_corrupt_index_is_ignored(suite: Path, tmp_path: Path) -> None:
    fresh = same_as_uncached(suite, tmp_path / "cache")
    indexes = list((tmp_path / "cache/index").glob("*.*"))
    assert indexes
    for junk in (b"{", b'{"tasks": {"x": 1}}', json.dumps({"tasks": {
            str(suite / "typo"): {"key": "t0", "sig": [["", 1]], "at": "x", "findings": 3}}
            }).encode()):  # fmt: skip
        for index in indexes:
            index.write_bytes(junk)
        assert linted([suite], LintCache(tmp_path / "cache")) == fresh


def test_configuration_and_options_are_part_of_the_key(suite: Path, tmp_path: Path) -> None:
    cache_dir = tmp_path / "cache"
    base = same_as_uncached(suite, cache_dir)
    assert same_as_uncached(suite, cache_dir, ignore=["ES1"]) != base
    assert same_as_uncached(suite, cache_dir, select=["ES4"]) != base
    codes = sorted({d.code for d in base})
    assert len(codes) >= 2, codes
    (suite / "pyproject.toml").write_text(f'[tool.endstate-author]\nignore = ["{codes[0]}"]\n')
    from_config = same_as_uncached(suite, cache_dir)
    assert from_config != base
    flipped = next(d for d in from_config)
    level = "error" if flipped.severity == "warning" else "warning"
    (suite / "pyproject.toml").write_text(
        f'[tool.endstate-author]\nignore = ["{codes[0]}"]\n'
        f'[tool.endstate-author.severity]\n{flipped.code} = "{level}"\n'
    )
    assert same_as_uncached(suite, cache_dir) != from_config


def test_the_tools_own_version_and_files_are_part_of_the_key(
    suite: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "package"
    package.mkdir()
    (package / "rules.py").write_text("RULES = 1\n")
    monkeypatch.setattr(lintcache, "_package_dirs", lambda: [str(package)])
    monkeypatch.setattr(lintcache, "_TOOL", None)
    cache_dir = tmp_path / "cache"
    same_as_uncached(suite, cache_dir)

    def misses_all() -> bool:
        lintcache._TOOL = None
        cache = LintCache(cache_dir)
        linted([suite], cache)
        return cache.hits == 0

    monkeypatch.setattr(lintcache, "__version__", "99.0.0")
    assert misses_all()
    (package / "rules.py").write_text("RULES = 22\n")  # an edited checkout, same version
    assert misses_all()
    assert not misses_all()  # and unchanged since: answered


def test_a_task_depending_on_the_outside_is_never_cached(tmp_path: Path) -> None:
    builder = TaskBuilder(tmp_path / "suite")
    suite = tmp_path / "suite"
    (suite).mkdir(parents=True)
    (suite / "suite_graders.py").write_text(
        "def reads_nothing(sandbox):\n    return True\n"
    )
    graders = [*good()["graders"], {"name": "suite_graders:reads_nothing"}]
    suite_task = builder(good(id="suite-grader", graders=graders), name="suite-grader")
    linked = builder(good(id="linked"), name="linked")
    (linked / "fixture" / "link").symlink_to("../prompt.md")
    cache = LintCache(tmp_path / "cache")
    for task in (suite_task, linked):
        assert cache.task_key(task, suite, lint_module.Config()) is None
    same_as_uncached(suite, tmp_path / "cache")
    # the suite's module changes a finding of the task: it is linted again, not answered
    (suite / "suite_graders.py").write_text("def other(sandbox):\n    return True\n")
    after = linted([suite], LintCache(tmp_path / "cache"))
    assert after == linted([suite], None)
    assert any(d.code == "ES202" for d in after)


def test_corrupt_entries_are_ignored(suite: Path, tmp_path: Path) -> None:
    cache_dir = tmp_path / "cache"
    fresh = same_as_uncached(suite, cache_dir)
    entries = sorted(p for p in cache_dir.rglob("*") if p.is_file())  # the indexes too
    assert entries
    for i, entry in enumerate(entries):
        entry.write_bytes([b"", b"{not json", b'{"key": "other", "findings": []}',
                           b'{"key": "%s", "findings": [{"code": 1}]}' % entry.stem.encode()
                           ][i % 4])  # fmt: skip
    cache = LintCache(cache_dir)
    assert linted([suite], cache) == fresh
    assert cache.hits == 0
    assert linted([suite], LintCache(cache_dir)) == fresh  # rewritten, and answered again


def test_an_unwritable_cache_folder_leaves_lint_uncached(suite: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    cache = LintCache(blocker / "cache")  # cannot be created, even by root
    assert linted([suite], cache) == linted([suite], None)
    assert not cache.writable and blocker.read_text() == "not a folder"


def test_a_task_edited_while_it_is_linted_is_not_stored(
    suite: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    original = lint_module.run_rules

    def edit_then_lint(ctx, config):  # type: ignore[no-untyped-def]
        if ctx.root.name == "second":
            (ctx.root / "prompt.md").write_text("Edited while linted.\n")
        return original(ctx, config)

    monkeypatch.setattr(lint_module, "run_rules", edit_then_lint)
    cache_dir = tmp_path / "cache"
    linted([suite], LintCache(cache_dir))
    monkeypatch.setattr(lint_module, "run_rules", original)
    cache = LintCache(cache_dir)
    assert linted([suite], cache) == linted([suite], None)
    assert cache.misses == 2  # "second" (and so the suite) was not stored under either key


def test_builtin_modules_are_the_harness_library() -> None:
    from endstate_harness import graders

    assert {graders.REFERENCE_MODULE, graders.THIS_MODULE} == lintcache.BUILTIN_MODULES


# ----- the command line ------------------------------------------------------------------


def cli(*args: str, cache: Path | None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}
    env.pop(lintcache.CACHE_ENV, None)
    if cache is not None:
        env[lintcache.CACHE_ENV] = str(cache)
    return subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "endstate_author", *args],
        capture_output=True, text=True, cwd=cwd, env=env, timeout=120,
    )  # fmt: skip


def imported(proc: subprocess.CompletedProcess) -> set[str]:
    return {
        line.rsplit("|", 1)[-1].strip()
        for line in proc.stderr.splitlines()
        if line.startswith("import time:")
    }


def messages(proc: subprocess.CompletedProcess) -> str:
    return "\n".join(ln for ln in proc.stderr.splitlines() if not ln.startswith("import time:"))


def test_cached_output_is_byte_identical_in_every_format(tmp_path: Path) -> None:
    builder = TaskBuilder(tmp_path / "suite")
    builder()
    builder(good(id="typo", category="bugfix", max_steps="9"), name="typo")
    builder(good(id="typo"), name="dup-\u00e9t\u00e9")  # a duplicate id, a non-ASCII name
    builder(good(id="clean"), name="clean")
    time.sleep(lintindex.RACY_NS / 1e9 + 0.1)  # older than the racy window: the index answers
    cache = tmp_path / "cache"
    runs = [
        ["lint", "suite", "-o", "json"],
        ["lint", "suite", "-o", "sarif", "--strict"],
        ["lint", "suite", "--output-format=github", "--select", "ES1,ES4"],
        ["lint", "suite"],
        ["lint", "suite/clean"],
        ["lint", "suite/clean", "-o", "json", "--exit-zero", "--isolated"],
    ]
    for argv in runs:
        uncached = cli(*argv, "--no-cache", cache=cache, cwd=tmp_path)
        assert uncached.returncode in (0, 1), uncached.stderr
        assert "endstate_author.rules.registry" in imported(uncached)
        filling = cli(*argv, cache=cache, cwd=tmp_path)
        answered = cli(*argv, cache=cache, cwd=tmp_path)
        for proc in (filling, answered):
            assert (proc.returncode, proc.stdout, messages(proc)) == (
                uncached.returncode, uncached.stdout, messages(uncached)
            ), argv  # fmt: skip
        # answered by the fast path: neither typer nor a rule was imported
        if "sarif" not in argv:
            assert not {"typer", "endstate_author.rules.registry"} & imported(answered), argv
    assert not list(cache.rglob(".tmp-*"))


def test_no_cache_writes_nothing_and_usage_errors_are_unchanged(tmp_path: Path) -> None:
    TaskBuilder(tmp_path / "suite")()
    cache = tmp_path / "cache"
    assert cli("lint", "suite", "--no-cache", cache=cache, cwd=tmp_path).returncode == 0
    assert not cache.exists()
    missing = cli("lint", "nowhere", cache=cache, cwd=tmp_path)
    assert missing.returncode == 2 and "nowhere: no such file" in messages(missing)
    bad = cli("lint", "suite", "-o", "xml", cache=cache, cwd=tmp_path)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr


def test_concurrent_lints_share_the_cache_safely(tmp_path: Path) -> None:
    builder = TaskBuilder(tmp_path / "suite")
    for i in range(12):
        builder(good(id=f"t-{i}", category="bugfix" if i % 3 else "bug-fix"), name=f"t-{i}")
    cache = tmp_path / "cache"
    env = {**os.environ, lintcache.CACHE_ENV: str(cache)}
    argv = [sys.executable, "-m", "endstate_author", "lint", "suite", "-o", "json"]
    procs = [
        subprocess.Popen(argv, cwd=tmp_path, env=env, stdout=subprocess.PIPE, text=True)
        for _ in range(4)
    ]
    outputs = [p.communicate(timeout=120)[0] for p in procs]
    expected = cli("lint", "suite", "-o", "json", "--no-cache", cache=None, cwd=tmp_path).stdout
    assert outputs == [expected] * 4
    assert cli("lint", "suite", "-o", "json", cache=cache, cwd=tmp_path).stdout == expected
    assert not list(cache.rglob(".tmp-*"))


def test_a_large_suite_is_checked_in_two_processes_alike(
    index_mode: str, tmp_path: Path
) -> None:
    builder = TaskBuilder(tmp_path / "suite")
    count = lintindex.PARALLEL_MIN + 6
    for i in range(count):
        builder(good(id=f"t-{i}", category="bugfix" if i % 5 == 0 else "bug-fix"), name=f"t-{i}")
    suite = tmp_path / "suite"
    settle()
    fresh = same_as_uncached(suite, tmp_path / "cache")
    cache = LintCache(tmp_path / "cache")
    assert linted([suite], cache) == fresh
    if index_mode == "trusted":  # (racy: whether 2 s passed on a loaded machine varies)
        assert cache.unread == count
    settle()
    for i in (1, count - 1):  # one task in each process's half
        (suite / f"t-{i}" / "task.json").write_text(json.dumps(good(id=f"t-{i}", max_steps="9")))
    cache = LintCache(tmp_path / "cache")
    assert linted([suite], cache) == linted([suite], None) != fresh
    assert cache.misses == 3  # the two edited tasks and the suite-wide rules


def _copy(source: Path, dest: Path) -> None:
    shutil.copytree(source, dest)
    manifest = json.loads((dest / "task.json").read_text())
    (dest / "task.json").write_text(json.dumps({**manifest, "id": dest.name}))


def _swap_group(suite: Path) -> None:
    """The group folder replaced by another one holding other tasks."""
    shutil.move(suite / "group", suite / "old-group")
    (suite / "group").mkdir()
    _copy(suite / "old-group/c", suite / "group/d")
    shutil.rmtree(suite / "old-group")


FOUND_CHANGES = {
    "a task added": lambda s: _copy(s / "a", s / "new"),
    "a task removed": lambda s: shutil.rmtree(s / "b"),
    "a task renamed": lambda s: (s / "b").rename(s / "b2"),
    "a task added in a group folder": lambda s: _copy(s / "a", s / "group/new"),
    "a task in a new folder of a task": lambda s: _copy(s / "a", s / "a/notes/inner"),
    "a task.json removed": lambda s: (s / "b/task.json").unlink(),
    "a group folder replaced": _swap_group,
    "a group folder made a link": lambda s: (
        shutil.move(s / "group", s / "elsewhere"), (s / "group").symlink_to(s / "elsewhere")
    ),
}


@pytest.mark.parametrize("change", sorted(FOUND_CHANGES))
def test_finding_the_tasks_again_sees_every_change(
    change: str, index_mode: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The tasks found below a suite are kept while no folder the search listed changed;
    any added, removed, renamed or replaced task or folder is found as a fresh search finds
    it (what a task's own files hold is the stat index's part, tested above)."""
    builder = TaskBuilder(tmp_path / "suite")
    for name in ("a", "b", "group/c"):
        builder(good(id=name.rsplit("/", 1)[-1]), name=name)
    suite = tmp_path / "suite"
    searches: list[Path] = []
    real_find = lintcache.layout.find_task_dirs

    def counted(root: Path, scanned: object = None) -> list[Path]:
        searches.append(root)
        return real_find(root, scanned)  # type: ignore[arg-type]

    monkeypatch.setattr(lintcache.layout, "find_task_dirs", counted)
    settle()
    same_as_uncached(suite, tmp_path / "cache")
    searches.clear()
    cache = LintCache(tmp_path / "cache")
    assert lint_module.resolve_targets([suite], cache.find_tasks) == lint_module.resolve_targets(
        [suite]
    )
    if index_mode == "trusted":
        assert searches == []  # answered by the index: nothing listed
    searches.clear()
    settle()
    FOUND_CHANGES[change](suite)
    cache = LintCache(tmp_path / "cache")
    expected = lint_module.resolve_targets([suite])
    assert lint_module.resolve_targets([suite], cache.find_tasks) == expected
    assert searches == [suite]  # the change was seen: searched again
    assert linted([suite], LintCache(tmp_path / "cache")) == linted([suite], None)


def test_a_suite_named_through_a_link_is_searched_again_when_it_points_elsewhere(
    index_mode: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("one", "two"):
        builder = TaskBuilder(tmp_path / name)
        builder(good(id="a"), name="a")
    TaskBuilder(tmp_path / "two")(good(id="b"), name="b")
    link = tmp_path / "suite"
    link.symlink_to(tmp_path / "one")
    monkeypatch.chdir(tmp_path)
    settle()
    relative = Path("suite")  # as typed: relative, through the link
    same_as_uncached(relative, tmp_path / "cache")
    assert LintCache(tmp_path / "cache").find_tasks(relative) == [Path("suite/a")]
    link.unlink()
    link.symlink_to(tmp_path / "two")
    assert LintCache(tmp_path / "cache").find_tasks(relative) == [Path("suite/a"), Path("suite/b")]
    assert linted([relative], LintCache(tmp_path / "cache")) == linted([relative], None)
