"""ES0 — the file itself. Each code: a case that draws it (with its exact range) and a near-miss."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.rules.conftest import TaskBuilder, codes, lint


def _only(diags, code):  # type: ignore[no-untyped-def]
    found = [d for d in diags if d.code == code]
    assert found, f"{code} not reported: {[(d.code, d.message) for d in diags]}"
    return found


def test_es001_trailing_comma_points_at_the_error(make_task: TaskBuilder) -> None:
    task = make_task('{\n  "id": "x",\n  "max_steps": 20,\n}\n', name="x")
    [d] = _only(lint(task), "ES001")
    assert (d.line, d.column, d.end_column) == (3, 18, 19)  # at the comma, not at the `}`
    assert d.severity == "error"
    assert "not valid JSON: a trailing comma before '}'" in d.message


def test_es001_missing_comma_points_after_the_value(make_task: TaskBuilder) -> None:
    task = make_task('{\n  "id": "x"\n  "max_steps": 20\n}\n', name="x")
    [d] = _only(lint(task), "ES001")
    assert (d.line, d.column) == (2, 11)  # the closing quote of "x"
    assert "a missing comma: add ',' after this value, before the next key" in d.message


def test_es001_near_miss_names_the_decoder_problem_otherwise(make_task: TaskBuilder) -> None:
    task = make_task('{"id": tru}', name="x")
    [d] = _only(lint(task), "ES001")
    assert "Expecting value" in d.message and "comma" not in d.message


@pytest.mark.parametrize(
    ("raw", "words"),
    [
        (b"", "empty"),
        (b"   \n", "empty"),
        (b"\xef\xbb\xbf{}", "byte-order mark"),
        (b'{"id": "caf\xe9"}', "not UTF-8"),
        (b"\x00\x01\x02binary", "binary"),
        (b"[" * 10000 + b"]" * 10000, "nesting"),
        (b'{"max_steps": NaN}', "NaN"),
    ],
)
def test_es001_unreadable_content_says_why(make_task: TaskBuilder, raw: bytes, words: str) -> None:
    task = make_task(raw, name="t")
    found = _only(lint(task), "ES001")
    assert words in found[0].message


def test_es001_directory_instead_of_file(make_task: TaskBuilder) -> None:
    task = make_task(name="dir-task")
    (task / "task.json").unlink()
    (task / "task.json").mkdir()
    [d] = _only(lint(task), "ES001")
    assert "directory" in d.message


def test_es001_huge_file_is_not_read(make_task: TaskBuilder) -> None:
    task = make_task(b'{"description": "' + b"x" * (2 << 20) + b'"}', name="huge")
    [d] = _only(lint(task), "ES001")
    assert "MiB" in d.message


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_es001_unreadable_file(make_task: TaskBuilder) -> None:
    task = make_task(name="locked")
    (task / "task.json").chmod(0)
    try:
        assert "ES001" in codes(task)
    finally:
        (task / "task.json").chmod(0o644)


def test_es001_near_miss_valid_json(make_task: TaskBuilder) -> None:
    assert "ES001" not in codes(make_task())


def test_es002_array_at_top_level(make_task: TaskBuilder) -> None:
    task = make_task('[{"name": "x:y"}]\n', name="arr")
    [d] = _only(lint(task), "ES002")
    assert (d.line, d.column, d.end_line, d.end_column) == (1, 1, 1, 18)
    assert codes(task) == ["ES002"] or set(codes(task)) <= {"ES002", "ES401", "ES402", "ES404"}


def test_es002_near_miss_object(make_task: TaskBuilder) -> None:
    assert "ES002" not in codes(make_task())


def test_es003_duplicate_key_points_at_the_first(make_task: TaskBuilder) -> None:
    raw = (
        '{\n  "max_steps": 5,\n  "graders": [{"name": "endstate.evals.graders:tree_unchanged"}],\n'
        '  "max_steps": 50\n}\n'
    )
    task = make_task(raw, name="dup")
    [d] = _only(lint(task), "ES003")
    assert (d.line, d.column, d.end_line, d.end_column) == (2, 3, 2, 14)
    assert "silently ignored" in d.message


def test_es003_nested_duplicate(make_task: TaskBuilder) -> None:
    raw = (
        '{"graders": [{"name": "endstate.evals.graders:tree_unchanged", "args": {"name": "a", '
        '"name": "b"}}]}'
    )
    task = make_task(raw, name="dup2")
    [d] = _only(lint(task), "ES003")
    assert "graders[0].args.name" in d.message


def test_es003_near_miss_same_key_in_sibling_objects(make_task: TaskBuilder) -> None:
    assert "ES003" not in codes(make_task())


def test_bad_inputs_never_stop_the_other_tasks(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    builder = TaskBuilder(suite)
    builder(b"\xff\xfe", name="broken")
    builder()
    loop = suite / "loop"
    loop.mkdir()
    (loop / "self").symlink_to(loop)
    diags = lint(suite)
    assert {d.file.parent.name for d in diags if d.code == "ES001"} == {"broken"}


def test_es001_task_json_linked_outside_the_task_is_not_followed(
    make_task: TaskBuilder, tmp_path: Path
) -> None:
    outside = tmp_path / "elsewhere.json"
    outside.write_text('{"graders": []}')
    task = make_task(name="linked")
    (task / "task.json").unlink()
    (task / "task.json").symlink_to(outside)
    [d] = _only(lint(task), "ES001")
    assert "outside the task folder" in d.message


def test_es001_near_miss_task_json_linked_inside_the_task(make_task: TaskBuilder) -> None:
    task = make_task()
    (task / "manifest.json").write_bytes((task / "task.json").read_bytes())
    (task / "task.json").unlink()
    (task / "task.json").symlink_to("manifest.json")
    assert "ES001" not in codes(task)
