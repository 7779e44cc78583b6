"""ES5 — assertions that cannot fail, found statically: draws and sound neighbours."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from tests.rules.conftest import GUIDE_GRADERS, TaskBuilder, good
from tests.rules.helpers_es345 import absent, found, span, where

RUN, PIN, SKIPS, SCOPE = (copy.deepcopy(g) for g in GUIDE_GRADERS)

Files = dict[str, str | bytes]


def with_graders(
    *extra: dict[str, Any], replace: dict[int, dict[str, Any]] | None = None
) -> dict[str, Any]:
    entries = [copy.deepcopy(g) for g in GUIDE_GRADERS]
    for index, entry in (replace or {}).items():
        entries[index] = entry
    return good(graders=[*entries, *extra])


def lib(name: str, **args: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"name": f"endstate.evals.graders:{name}"}
    if args:
        spec["args"] = args
    return spec


def value_span(task: Path, member: str) -> tuple[int, int, int, int]:
    """The span of the value of a one-line ``"key": value`` member of task.json."""
    line, col, _, end = span(task, member)
    return line, col + member.index(": ") + 2, line, end


def test_es501_pinned_path_not_in_fixture(make_task: TaskBuilder) -> None:
    pin = lib("files_unchanged", paths=["tests/test_chunk.py", "tests/test_chunks.py", "tests"])
    task = make_task(with_graders(replace={1: pin}))
    hits = found(task, "ES501")
    assert [where(d) for d in hits] == [span(task, '"tests/test_chunks.py"'), span(task, '"tests"')]
    assert all(d.severity == "error" for d in hits)
    assert "folder" in hits[1].message


def test_es501_near_miss_dot_slash(make_task: TaskBuilder) -> None:
    task = make_task(
        with_graders(replace={1: lib("files_unchanged", paths=["./tests/test_chunk.py"])})
    )
    absent(task, "ES501")


def test_es502_solution_change_outside_allowed(make_task: TaskBuilder) -> None:
    task = make_task(with_graders(replace={3: lib("changed_paths_within", allowed=["docs/*"])}))
    hits = found(task, "ES502")
    errors = [d for d in hits if d.severity == "error"]
    assert len(errors) == 1 and "chunker/core.py" in errors[0].message
    assert where(errors[0]) == span(task, '"allowed"')
    assert any(d.severity == "warning" and where(d) == span(task, '"docs/*"') for d in hits)


def test_es502_allows_everything(make_task: TaskBuilder) -> None:
    for i, pattern in enumerate(("*", "**", "?*")):
        task = make_task(
            with_graders(replace={3: lib("changed_paths_within", allowed=["chunker/*", pattern])}),
            name=f"everything-{i}",
        )
        [d] = found(task, "ES502")
        assert d.severity == "error"
        assert where(d) == span(task, f'"{pattern}"')


def test_es502_near_misses(make_task: TaskBuilder) -> None:
    # the guide's ["chunker/*", "*.md"]: *.md matches no file yet names files an agent may add
    absent(make_task(), "ES502")
    # */* does not allow a new top-level file (a shadowing unittest.py): not "everything"
    task = make_task(
        with_graders(replace={3: lib("changed_paths_within", allowed=["*/*"])}), name="slash"
    )
    absent(task, "ES502")


def test_es502_dead_literal_path_warns(make_task: TaskBuilder) -> None:
    scope = lib("changed_paths_within", allowed=["chunker/core.py", "chunker/util.py"])
    task = make_task(with_graders(replace={3: scope}))
    [d] = found(task, "ES502")
    assert d.severity == "warning"
    assert where(d) == span(task, '"chunker/util.py"')


def test_es503_solution_edits_pinned_test(make_task: TaskBuilder) -> None:
    task = make_task(
        solution={
            "chunker/core.py": "x = 1\n",
            "tests/test_chunk.py": "import unittest\n",
        },
        name="pinned",
    )
    [d] = found(task, "ES503")
    assert d.severity == "error"
    assert where(d) == span(task, '"tests/test_chunk.py"')


def test_es503_tree_unchanged_with_solution(make_task: TaskBuilder) -> None:
    task = make_task(good(graders=[RUN, lib("tree_unchanged")]))
    [d] = found(task, "ES503")
    assert where(d) == span(task, '"endstate.evals.graders:tree_unchanged"')


def test_es503_near_miss_guide(make_task: TaskBuilder) -> None:
    absent(make_task(), "ES503")


def test_es504_skip_glob_matches_nothing(make_task: TaskBuilder) -> None:
    task = make_task(with_graders(replace={2: lib("no_new_skips", glob="spec/*_spec.py")}))
    [d] = found(task, "ES504")
    assert d.severity == "warning"
    assert where(d) == span(task, '"spec/*_spec.py"')


def test_es504_default_glob_with_no_tests(make_task: TaskBuilder) -> None:
    # note: tests/__init__.py would match the default *test*.py, so the fixture has no tests/
    fixture: Files = {"chunker/__init__.py": "", "chunker/core.py": "x = 1\n"}
    task = make_task(fixture=fixture)
    [d] = found(task, "ES504")
    assert where(d) == span(task, '"endstate.evals.graders:no_new_skips"')


def test_es504_near_miss(make_task: TaskBuilder) -> None:
    absent(make_task(with_graders(replace={2: lib("no_new_skips", glob="tests/*.py")})), "ES504")


def test_es505_unbreakable_bounds(make_task: TaskBuilder) -> None:
    task = make_task(good(requires={"steps": {"max": 20}, "denied_calls": {"min": 0}}))
    hits = found(task, "ES505")
    assert all(d.severity == "warning" for d in hits)
    assert sorted(where(d) for d in hits) == sorted(
        [value_span(task, '"max": 20'), value_span(task, '"min": 0')]
    )


def test_es505_default_max_steps(make_task: TaskBuilder) -> None:
    task = make_task(good(max_steps=None, requires={"steps": {"max": 25}}))
    assert "max_steps 25" in found(task, "ES505")[0].message


def test_es505_near_miss(make_task: TaskBuilder) -> None:
    task = make_task(good(requires={"steps": {"max": 19}, "denied_calls": {"min": 0, "max": 2}}))
    absent(task, "ES505")


def test_es506_checked_path_missing(make_task: TaskBuilder) -> None:
    task = make_task(
        with_graders(
            lib("file_contains", path="chunker/cor.py", text="size"),
            lib("paths_exist", paths=["chunker", "chunker/new.py"]),
            lib("pattern_count", pattern="def ", paths=["chunker/core.py", "pkg/x.py"], maximum=3),
        )
    )
    hits = found(task, "ES506")
    assert sorted(where(d) for d in hits) == sorted(
        [span(task, '"chunker/cor.py"'), span(task, '"chunker/new.py"'), span(task, '"pkg/x.py"')]
    )
    assert all(d.severity == "warning" for d in hits)


def test_es506_near_miss_solution_file(make_task: TaskBuilder) -> None:
    task = make_task(
        with_graders(lib("file_matches", path="chunker/extra.py", pattern="def ")),
        solution={"chunker/core.py": "x = 2\n", "chunker/extra.py": "def f(): pass\n"},
    )
    absent(task, "ES506")


def test_es507_start_folder_missing(make_task: TaskBuilder) -> None:
    run = lib("command_succeeds", command="python -m unittest discover -s test -t . -q")
    task = make_task(with_graders(replace={0: run}))
    [d] = found(task, "ES507")
    assert d.severity == "error"
    assert where(d) == span(task, '"python -m unittest discover -s test -t . -q"')
    assert "test/" in d.message


def test_es507_tests_pass_and_named_module(make_task: TaskBuilder) -> None:
    tp = {"name": "endstate_harness.graders:tests_pass", "args": {"start_dir": "spec"}}
    task = make_task(with_graders(replace={0: tp}))
    [d] = found(task, "ES507")
    assert where(d) == span(task, '"spec"')
    run = lib("command_succeeds", command="cd chunker && python -m unittest tests.test_chunk")
    task2 = make_task(with_graders(replace={0: run}), name="named")
    assert "tests.test_chunk" in found(task2, "ES507")[0].message


def test_es507_near_misses_holdout_and_unknown(make_task: TaskBuilder) -> None:
    # every test held out: the folder exists when the command runs at grading
    fixture: Files = {"chunker/__init__.py": "", "chunker/core.py": "x = 1\n"}
    holdout: Files = {"tests/__init__.py": "", "tests/test_h.py": "import unittest\n"}
    absent(make_task(fixture=fixture, holdout=holdout), "ES507")
    run = lib("command_succeeds", command="make test")
    absent(make_task(with_graders(replace={0: run}), name="make"), "ES507")
    run = lib("command_succeeds", command="python -m unittest tests.test_chunk")
    absent(make_task(with_graders(replace={0: run}), name="mod"), "ES507")


def test_es506_delegates_to_reads_its_path(make_task: TaskBuilder) -> None:
    spec = {"name": "endstate_harness.graders:delegates_to",
            "args": {"path": "chunker/cor.py", "functions": ["chunk"], "to": "chunk"}}
    task = make_task(with_graders(spec))
    [d] = found(task, "ES506")
    assert where(d) == span(task, '"chunker/cor.py"')
    spec["args"]["path"] = "chunker/core.py"  # type: ignore[index]
    absent(make_task(with_graders(spec), name="present"), "ES506")
