"""ES1 — manifest keys and values. Draws and near-misses with exact ranges."""

from __future__ import annotations

import json
from pathlib import Path

from endstate_author.engine.fixes import splice
from tests.rules.conftest import GOOD_MANIFEST, TaskBuilder, codes, good, lint


def _found(task: Path, code: str):  # type: ignore[no-untyped-def]
    found = [d for d in lint(task) if d.code == code]
    assert found, f"{code} missing from {[(d.code, d.message) for d in lint(task)]}"
    return found


def _text_at(task: Path, d) -> str:  # type: ignore[no-untyped-def]
    data = (task / "task.json").read_bytes()
    return data[d.start_offset : d.end_offset].decode()


def test_guide_manifest_lints_without_es1(make_task: TaskBuilder) -> None:
    assert not [c for c in codes(make_task()) if c.startswith("ES1")]


def test_es101_unknown_top_level_key_with_suggestion(make_task: TaskBuilder) -> None:
    data = good(max_steps=None)
    data["max_step"] = 5
    task = make_task(data)
    [d] = _found(task, "ES101")
    assert _text_at(task, d) == '"max_step"'
    assert "did you mean 'max_steps'" in d.message
    assert d.fix is not None and d.fix.safe


def test_es101_bound_typo_minimum(make_task: TaskBuilder) -> None:
    task = make_task(good(requires={"denied_calls": {"minimum": 1}}))
    [d] = _found(task, "ES101")
    assert _text_at(task, d) == '"minimum"'
    assert "did you mean 'min'" in d.message


def test_es101_trailing_space_key(make_task: TaskBuilder) -> None:
    data = good()
    data["graders "] = data.pop("graders")
    task = make_task(data)
    messages = [d.message for d in lint(task) if d.code == "ES101"]
    assert any("did you mean 'graders'" in m for m in messages)


def test_es101_every_level_is_closed(make_task: TaskBuilder) -> None:
    data = good(
        budget={"max_context_tokens": 60000, "reserve": 1},
        recovery={"crash_at_call": 1, "after": True},
        requires={"steps": {"max": 5, "maxx": 6}, "finaltext": {"min": 1}},
    )
    data["graders"][0]["argz"] = {}
    task = make_task(data)
    keys = sorted(_text_at(task, d) for d in _found(task, "ES101"))
    assert keys == ['"after"', '"argz"', '"finaltext"', '"maxx"', '"reserve"']


def test_es101_near_miss_schema_key_allowed(make_task: TaskBuilder) -> None:
    data = {"$schema": "../task.schema.json", **good()}
    assert "ES101" not in codes(make_task(data))


def test_es101_fix_round_trips(make_task: TaskBuilder) -> None:
    task = make_task(good(requires={"denied_calls": {"minimum": 1}}))
    [d] = _found(task, "ES101")
    assert d.fix is not None
    before = (task / "task.json").read_bytes()
    after = splice(before, d.fix.edits)
    assert json.loads(after)["requires"] == {"denied_calls": {"min": 1}}
    assert before.replace(b'"minimum"', b'"min"') == after


def test_es102_string_for_int(make_task: TaskBuilder) -> None:
    task = make_task(good(max_steps="20"))
    [d] = _found(task, "ES102")
    assert _text_at(task, d) == '"20"'
    assert "strict" in d.message


def test_es102_out_of_range(make_task: TaskBuilder) -> None:
    task = make_task(
        good(timeout_s=-1.0, budget={"max_context_tokens": 0}, recovery={"crash_at_call": -1})
    )
    texts = sorted(_text_at(task, d) for d in _found(task, "ES102"))
    assert texts == ["-1", "-1.0", "0"]


def test_es102_bool_is_not_int_and_missing_crash_at(make_task: TaskBuilder) -> None:
    task = make_task(good(max_steps=True, recovery={"after_side_effect": True}))
    messages = [d.message for d in _found(task, "ES102")]
    assert any("max_steps must be an integer" in m for m in messages)
    assert any("recovery.crash_at_call is required" in m for m in messages)


def test_es102_near_miss_int_timeout_is_a_number(make_task: TaskBuilder) -> None:
    assert "ES102" not in codes(make_task(good(timeout_s=600)))


def test_es103_unknown_category(make_task: TaskBuilder) -> None:
    task = make_task(good(category="bugfix"))
    [d] = _found(task, "ES103")
    assert _text_at(task, d) == '"bugfix"'
    assert "did you mean 'bug-fix'" in d.message and d.fix is not None


def test_es103_near_miss(make_task: TaskBuilder) -> None:
    assert "ES103" not in codes(make_task(good(category="feature")))


def test_es104_empty_bound_and_inverted(make_task: TaskBuilder) -> None:
    task = make_task(good(requires={"steps": {}, "total_tokens": {"min": 9, "max": 3}}))
    found = _found(task, "ES104")
    assert sorted(_text_at(task, d) for d in found) == sorted(
        ["{}", '{\n      "min": 9,\n      "max": 3\n    }']
    )


def test_es104_negative_end(make_task: TaskBuilder) -> None:
    task = make_task(good(requires={"steps": {"max": -1}}))
    [d] = _found(task, "ES104")
    assert _text_at(task, d) == "-1"


def test_es104_near_miss(make_task: TaskBuilder) -> None:
    assert "ES104" not in codes(make_task(good(requires={"steps": {"min": 0, "max": 9}})))


def test_es105_unknown_stop_reason(make_task: TaskBuilder) -> None:
    task = make_task(good(requires={"stop_reason": "end-turn"}))
    [d] = _found(task, "ES105")
    assert _text_at(task, d) == '"end-turn"' and "end_turn" in d.message


def test_es105_near_miss(make_task: TaskBuilder) -> None:
    assert "ES105" not in codes(make_task(good(requires={"stop_reason": "end_turn"})))


def test_es106_id_differs_from_folder(make_task: TaskBuilder) -> None:
    task = make_task(good(id="Fix_Chunk"), name="fix-chunk")
    [d] = _found(task, "ES106")
    assert d.severity == "warning" and _text_at(task, d) == '"Fix_Chunk"'


def test_es106_not_kebab(make_task: TaskBuilder) -> None:
    task = make_task(good(id="Fix_Chunk"), name="Fix_Chunk")
    [d] = _found(task, "ES106")
    assert "kebab" in d.message


def test_es106_near_miss_no_id_key(make_task: TaskBuilder) -> None:
    assert "ES106" not in codes(make_task(good(id=None), name="fix-chunk"))


def test_es107_duplicate_ids_in_suite(tmp_path: Path) -> None:
    builder = TaskBuilder(tmp_path / "suite")
    builder(good(id="same"), name="same")
    builder(good(id="same"), suite=tmp_path / "suite" / "nested", name="same")
    found = [d for d in lint(tmp_path / "suite") if d.code == "ES107"]
    assert len(found) == 1


def test_es107_near_miss_distinct(tmp_path: Path) -> None:
    builder = TaskBuilder(tmp_path / "suite")
    builder(good(id="one"), name="one")
    builder(good(id="two"), name="two")
    assert "ES107" not in [d.code for d in lint(tmp_path / "suite")]


def test_es108_reserve_swallows_budget(make_task: TaskBuilder) -> None:
    task = make_task(good(budget={"max_context_tokens": 4000, "reserve_output_tokens": 8000}))
    [d] = _found(task, "ES108")
    assert _text_at(task, d).startswith("{")


def test_es108_near_miss_default_reserve(make_task: TaskBuilder) -> None:
    assert "ES108" not in codes(make_task(good(budget={"max_context_tokens": 9000})))


def test_es109_no_prompt(make_task: TaskBuilder) -> None:
    task = make_task(prompt=None)
    [d] = _found(task, "ES109")
    assert d.severity == "error"


def test_es109_dead_prompt_key(make_task: TaskBuilder) -> None:
    task = make_task(good(prompt="Fix it"))
    [d] = _found(task, "ES109")
    assert d.severity == "warning" and _text_at(task, d) == '"prompt"'


def test_es109_empty_prompt_md_and_move_fix(make_task: TaskBuilder) -> None:
    task = make_task(good(prompt="Fix the chunker."), prompt="  \n")
    [d] = _found(task, "ES109")
    assert d.severity == "error" and d.fix is not None and d.fix.safe
    after = splice((task / "task.json").read_bytes(), d.fix.edits)
    assert json.loads(after) == {k: v for k, v in good().items()}
    assert d.fix.creates[0].content == "Fix the chunker.\n"


def test_es109_near_miss_key_only(make_task: TaskBuilder) -> None:
    assert "ES109" not in codes(make_task(good(prompt="Fix it"), prompt=None))


def test_guide_manifest_exact(make_task: TaskBuilder) -> None:
    """The authoring guide's example manifest, as printed, lints with no ES1 finding."""
    assert GOOD_MANIFEST["id"] == "fix-chunk-off-by-one"
    assert not [c for c in codes(make_task()) if c.startswith(("ES0", "ES1"))]
