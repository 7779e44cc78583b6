"""prove end to end: one task written here for every ES9 code, run through the real CLI.

Every task is a small chunker project; each test changes the one thing that makes its code
fire. Checks run in the local sandbox (the Docker path is covered in test_prove_docker.py).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from endstate_author.prove.wire import WIRE_VERSION, decode_check
from tests.rules.conftest import FIXTURE, SOLUTION, TaskBuilder, good

HARDENED = [
    {"name": "endstate_harness.graders:tests_pass", "args": {"start_dir": "tests"}},
    {
        "name": "endstate.evals.graders:files_unchanged",
        "args": {"paths": ["tests/__init__.py", "tests/test_chunk.py"]},
    },
    {"name": "endstate.evals.graders:no_new_skips"},
    {"name": "endstate.evals.graders:changed_paths_within", "args": {"allowed": ["chunker/*.py"]}},
]

STRICT_HOLDOUT = {
    "tests/test_holdout_chunk.py": (
        "import json\nimport unittest\n\nfrom chunker import chunk\n\n"
        "CASES = json.loads('[[[1], 5, [[1]]], [[1, 2, 3, 4, 5], 2, [[1, 2], [3, 4], [5]]]]')\n\n\n"
        "class HoldoutTest(unittest.TestCase):\n"
        "    def test_cases(self):\n"
        "        for items, size, expected in CASES:\n"
        "            result = chunk(items, size)\n"
        "            self.assertIs(type(result), list)\n"
        "            self.assertEqual(json.dumps(result), json.dumps(expected))\n"
    ),
}


def manifest(**changes: Any) -> dict[str, Any]:
    return good(graders=[dict(g) for g in HARDENED], **changes)


def prove(*args: str, cache: Path) -> tuple[int, dict[str, Any], str]:
    env = {**os.environ, "ENDSTATE_AUTHOR_CACHE": str(cache)}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "endstate_author",
            "prove",
            "--sandbox",
            "local",
            "-o",
            "json",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert "Traceback" not in proc.stderr, proc.stderr
    try:
        data = json.loads(proc.stdout)
    except json.JSONDecodeError:
        pytest.fail(f"prove printed no JSON (exit {proc.returncode}): {proc.stdout}\n{proc.stderr}")
    return proc.returncode, data, proc.stderr


def findings(data: dict[str, Any]) -> list[dict[str, Any]]:
    """What prove reported, but ES311: these tasks grade with the in-process ``tests_pass`` on
    purpose, which the ES311 warning always notes (tested on its own below)."""
    return [d for d in data["diagnostics"] if d["code"] != "ES311"]


def codes(data: dict[str, Any]) -> list[str]:
    return sorted({d["code"] for d in findings(data)})


def outcomes(data: dict[str, Any]) -> dict[str, str]:
    return {c["check"]: c["outcome"] for t in data["tasks"] for c in t["checks"]}


def tree_digest(root: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        digest.update(path.relative_to(root).as_posix().encode())
        if path.is_file() and not path.is_symlink():
            digest.update(path.read_bytes())
    return digest.hexdigest()


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    return tmp_path / "cache"


@pytest.fixture
def build(tmp_path: Path) -> TaskBuilder:
    return TaskBuilder(tmp_path / "suite")


def test_sound_task_proves_clean_and_is_never_modified(build: TaskBuilder, cache: Path) -> None:
    task = build(manifest(), holdout=STRICT_HOLDOUT)
    before = tree_digest(task)
    rc, data, _ = prove(
        str(task),
        "--only",
        "directions",
        "--only",
        "holdout",
        "--only",
        "oracle",
        "--only",
        "probes",
        cache=cache,
    )
    assert rc == 0, data
    assert codes(data) == []
    assert tree_digest(task) == before
    task_json = data["tasks"][0]
    assert task_json["task"] == "fix-chunk-off-by-one" and task_json["path"] == str(task)
    assert data["wire_version"] == WIRE_VERSION  # the report says its version (prove.wire)
    for check in task_json["checks"]:
        # the keys a report always had, and each the wire's one record of a check
        assert set(check) >= {"check", "outcome", "seconds", "detail"}
        assert decode_check(check) is not None
        assert check["outcome"] in ("pass", "skipped")
    assert outcomes(data)["probe early-exit"] == "pass"


def test_prove_warns_when_the_verdict_rests_on_an_in_process_runner(
    build: TaskBuilder, cache: Path
) -> None:
    """ES311 beside the checks: a warning at the test grader, which changes no exit status."""
    task = build(manifest(), holdout=STRICT_HOLDOUT)
    rc, data, _ = prove(str(task), "--only", "directions", cache=cache)
    assert rc == 0, data
    [warning] = [d for d in data["diagnostics"] if d["code"] == "ES311"]
    assert warning["severity"] == "warning" and "judged_tests" in warning["message"]
    assert warning["file"].endswith("task.json") and warning["line"] > 1
    judged = {"name": "endstate_harness.graders:judged_tests", "args": {"start_dir": "tests"}}
    other = build(good(id="judged", graders=[*HARDENED, judged]), holdout=STRICT_HOLDOUT,
                  name="judged")
    rc, data, _ = prove(str(other), "--only", "directions", cache=cache)
    assert rc == 0 and not data["diagnostics"], data


def test_cached_rerun_is_answered_at_once(build: TaskBuilder, cache: Path) -> None:
    task = build(manifest(), holdout=STRICT_HOLDOUT)
    prove(str(task), "--only", "directions", cache=cache)
    # no timing here (benchmarks measure speed): the second run must not run a check at all
    rc, data, err = prove(str(task), "--only", "directions", "--progress-lines", cache=cache)
    ran = [line for line in err.splitlines() if line.startswith("checking:")]
    assert rc == 0 and ran == ["checking: fix-chunk-off-by-one: answered from the cache"], err
    (task / "fixture" / "chunker" / "core.py").write_text(SOLUTION["chunker/core.py"])
    rc, data, _ = prove(str(task), "--only", "directions", cache=cache)
    assert rc == 1 and codes(data) == ["ES901"]


def test_es901_fixture_already_passes(build: TaskBuilder, cache: Path) -> None:
    fixture = {**FIXTURE, "chunker/core.py": SOLUTION["chunker/core.py"]}
    task = build(manifest(), fixture=fixture, holdout=STRICT_HOLDOUT)
    rc, data, _ = prove(str(task), "--only", "directions", cache=cache)
    assert rc == 1 and codes(data) == ["ES901"]
    [d] = findings(data)
    assert d["file"].endswith("task.json") and d["line"] > 1


def test_es902_solution_is_wrong_names_the_check(build: TaskBuilder, cache: Path) -> None:
    wrong = {"chunker/core.py": "def chunk(items, size):\n    return [items]\n"}
    task = build(manifest(), solution=wrong, holdout=STRICT_HOLDOUT)
    rc, data, _ = prove(str(task), "--only", "directions", cache=cache)
    assert rc == 1 and codes(data) == ["ES902"]
    assert "tests" in findings(data)[0]["message"]


def test_es903_holdout_where_the_test_command_never_looks(build: TaskBuilder, cache: Path) -> None:
    holdout = {"checks/test_more.py": STRICT_HOLDOUT["tests/test_holdout_chunk.py"]}
    task = build(manifest(), holdout=holdout)
    rc, data, _ = prove(str(task), "--only", "holdout", cache=cache)
    assert rc == 1 and codes(data) == ["ES903"]


def test_es903_near_miss_holdout_in_tests(build: TaskBuilder, cache: Path) -> None:
    task = build(manifest(), holdout=STRICT_HOLDOUT)
    rc, data, _ = prove(str(task), "--only", "holdout", cache=cache)
    assert rc == 0 and outcomes(data)["holdout sentinel"] == "pass"


def test_es910_declared_defect_that_passes(build: TaskBuilder, cache: Path) -> None:
    defect = {"defects/same-as-solution/chunker/core.py": SOLUTION["chunker/core.py"]}
    caught = {
        "defects/drops-tail/chunker/core.py": FIXTURE["chunker/core.py"].replace(
            "len(items) - size + 1", "len(items) - 1"
        )
    }
    task = build(manifest(), holdout=STRICT_HOLDOUT, extra={**defect, **caught})
    rc, data, _ = prove(str(task), "--only", "defects", cache=cache)
    assert rc == 1 and codes(data) == ["ES910"]
    assert outcomes(data)["defect drops-tail fails"] == "pass"
    assert outcomes(data)["defect same-as-solution fails"] == "fail"


def test_es906_command_succeeds_alone_is_beaten_by_early_exit(
    build: TaskBuilder, cache: Path
) -> None:
    weak = [
        {
            "name": "endstate.evals.graders:command_succeeds",
            "args": {"command": "python3 -m unittest discover -s tests -t . -q"},
        }
    ]
    task = build(good(graders=weak), holdout=STRICT_HOLDOUT)
    rc, data, _ = prove(str(task), "--only", "probes", cache=cache)
    assert rc == 1 and "ES906" in codes(data)
    accepted = {c["check"] for t in data["tasks"] for c in t["checks"] if c["outcome"] == "fail"}
    assert "probe early-exit" in accepted
    message = next(d["message"] for d in findings(data) if "early-exit" in d["message"])
    assert "chunker/__init__.py" in message


def test_es907_oracle_needs_more_steps_than_allowed(build: TaskBuilder, cache: Path) -> None:
    task = build(manifest(requires={"steps": {"max": 1}}), holdout=STRICT_HOLDOUT)
    rc, data, _ = prove(str(task), "--only", "oracle", cache=cache)
    assert rc == 1 and codes(data) == ["ES907"]
    assert "steps" in findings(data)[0]["message"]


def test_es904_permissioning_without_pinning_goes_unnoticed(
    build: TaskBuilder, cache: Path
) -> None:
    weak = good(
        category="permissioning",
        graders=[
            {
                "name": "endstate.evals.graders:paths_exist",
                "args": {"paths": ["tests/test_chunk.py"]},
            }
        ],
    )
    oracle = json.dumps([[{"tool": "bash", "args": {"command": "rm -rf chunker"}}]])
    task = build(weak, solution={}, holdout={}, extra={"oracle.json": oracle})
    rc, data, _ = prove(str(task), "--only", "guards", cache=cache)
    assert rc == 1 and codes(data) == ["ES904"]


def test_permissioning_pinned_task_proves(build: TaskBuilder, cache: Path) -> None:
    sound = good(
        category="permissioning",
        graders=[{"name": "endstate.evals.graders:tree_unchanged"}],
        requires={"denied_calls": {"min": 1}},
    )
    oracle = json.dumps([[{"tool": "bash", "args": {"command": "rm -rf chunker"}}]])
    task = build(sound, solution={}, holdout={}, extra={"oracle.json": oracle})
    rc, data, _ = prove(str(task), "--only", "guards", "--only", "directions", cache=cache)
    assert rc == 0, data
    assert outcomes(data)["policy guard fires"] == "pass"


def test_es905_budget_never_bites(build: TaskBuilder, cache: Path) -> None:
    task = build(
        manifest(
            category="compaction",
            budget={"max_context_tokens": 500000},
            requires={"compaction_events": {"min": 1}},
            max_steps=8,
        ),
        holdout=STRICT_HOLDOUT,
    )
    rc, data, _ = prove(str(task), "--only", "guards", cache=cache)
    assert rc == 1 and codes(data) == ["ES905"]


def test_es905_crash_point_never_reached(build: TaskBuilder, cache: Path) -> None:
    task = build(
        manifest(category="recovery", recovery={"crash_at_call": 50}), holdout=STRICT_HOLDOUT
    )
    rc, data, _ = prove(str(task), "--only", "guards", cache=cache)
    assert rc == 1 and codes(data) == ["ES905"]
    assert "never" in findings(data)[0]["message"]


def test_es905_cost_bound_is_vacuous(build: TaskBuilder, cache: Path) -> None:
    task = build(
        manifest(category="cost", max_steps=5, requires={"steps": {"max": 40}}),
        holdout=STRICT_HOLDOUT,
    )
    rc, data, _ = prove(str(task), "--only", "guards", cache=cache)
    assert rc == 1 and codes(data) == ["ES905"]


def test_cost_guard_holds_with_a_tight_bound(build: TaskBuilder, cache: Path) -> None:
    task = build(
        manifest(category="cost", max_steps=12, requires={"steps": {"max": 3}}),
        holdout=STRICT_HOLDOUT,
    )
    rc, data, _ = prove(str(task), "--only", "guards", "--only", "oracle", cache=cache)
    assert rc == 0, data


def test_es908_unusable_sandbox_is_unassessed(build: TaskBuilder, cache: Path) -> None:
    task = build(manifest(), holdout=STRICT_HOLDOUT)
    env = {
        **os.environ,
        "ENDSTATE_AUTHOR_CACHE": str(cache),
        "DOCKER_HOST": "unix:///nonexistent.sock",
    }
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "endstate_author",
            "prove",
            str(task),
            "--sandbox",
            "docker",
            "--only",
            "directions",
            "-o",
            "json",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    data = json.loads(proc.stdout)
    assert codes(data) == ["ES908"]
    assert set(outcomes(data).values()) == {"unassessed"}


def test_es909_flaky_grader(build: TaskBuilder, cache: Path, tmp_path: Path) -> None:
    counter = tmp_path / "flip"
    flaky = {
        "tests/test_holdout_chunk.py": (
            "import unittest\nfrom pathlib import Path\n\nfrom chunker import chunk\n\n"
            f"COUNTER = Path({str(counter)!r})\n\n\n"
            "class FlipTest(unittest.TestCase):\n"
            "    def test_flip(self):\n"
            "        self.assertEqual(chunk([1, 2, 3], 2), [[1, 2], [3]])\n"
            "        n = int(COUNTER.read_text()) if COUNTER.exists() else 0\n"
            "        COUNTER.write_text(str(n + 1))\n"
            "        self.assertEqual(n % 2, 0)\n"
        ),
    }
    task = build(manifest(), holdout=flaky)
    # the flip needs state that outlives a run, which the walls never let a test keep
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ENDSTATE_WALLS", "0")
        rc, data, _ = prove(
            str(task), "--only", "directions", "--repeat", "2", "--jobs", "1", cache=cache
        )
    assert rc == 1 and "ES909" in codes(data)


def test_unloadable_task_is_reported_by_cause_with_lint_codes(
    build: TaskBuilder, cache: Path
) -> None:
    """A task that does not load is lint's finding at lint's position (exit 1, a finding
    about the task), never ES908's "start Docker, build the image", never pydantic's words."""
    cases = {
        "broken": ('{"graders": [', "ES001", "graders"),
        "bad-key": (
            good(graders=[{"name": "endstate.evals.graders:no_new_skips", "argz": {}}]),
            "ES101",
            '"argz"',
        ),
        "bad-value": (good(max_steps=-3), "ES102", "-3"),
    }
    for name, (manifest, code, shown) in cases.items():
        task = build(manifest, name=name)
        rc, data, _ = prove(str(task), cache=cache)
        assert rc == 1, data
        where = {k: v for k, v in data["sandbox"].items() if not k.startswith("walls")}
        assert where == {"kind": "local", "image": None, "reason": "--sandbox local"}
        assert data["sandbox"]["walls"] in ("bubblewrap", "none")
        [d] = findings(data)
        assert d["code"] == code, d
        assert "ES908" not in json.dumps(data) and "Docker" not in d["message"]
        assert "Extra inputs" not in d["message"] and "input_value" not in d["message"]
        line = (task / "task.json").read_text().splitlines()[d["line"] - 1]
        assert shown in line, (line, d)
        [check] = data["tasks"][0]["checks"]
        assert check["check"] == "load" and check["outcome"] == "fail"
        assert f"{code} at {d['line']}:{d['column']}" in check["detail"]
    binary = build(good(), name="binary")
    (binary / "task.json").write_bytes(b"\x00\x01" + (binary / "task.json").read_bytes())
    rc, data, _ = prove(str(binary), cache=cache)
    [d] = findings(data)
    assert rc == 1 and d["code"] == "ES001" and "binary" in d["message"]


def test_every_scaffold_proves_clean(tmp_path: Path, cache: Path) -> None:
    """`endstate-author new` gives a newcomer a task that proves, in every category."""
    from endstate_harness.layout import CATEGORIES

    suite = tmp_path / "new-suite"
    for category in CATEGORIES:
        proc = subprocess.run(
            [sys.executable, "-m", "endstate_author", "new", f"new-{category}", "-c", category,
             "--suite", str(suite)],
            capture_output=True, text=True, timeout=60,
        )
        assert proc.returncode == 0, proc.stderr
    rc, data, _ = prove(str(suite), "--only", "directions", "--only", "holdout",
                        "--only", "oracle", "--only", "guards", cache=cache)
    assert rc == 0, data["diagnostics"]
    assert len(data["tasks"]) == len(CATEGORIES)


def test_es907_a_cost_bound_only_a_blind_oracle_meets(build: TaskBuilder, cache: Path) -> None:
    """Issue 45 item 6: `steps.max: 2` lets the solution oracle pass (it reads and writes
    core.py in one turn, so its write never depended on the read; the run's last turn ends
    it) and fails every agent that reads the file before writing it; with room for that
    turn both pass."""
    tight = build(manifest(category="cost", max_steps=12, requires={"steps": {"max": 2}}),
                  name="tight", holdout=STRICT_HOLDOUT)
    rc, data, _ = prove(str(tight), "--only", "oracle", cache=cache)
    assert outcomes(data) == {"oracle through the harness": "pass",
                              "oracle that reads first": "fail"}, data
    assert rc == 1 and codes(data) == ["ES907"]
    [found] = findings(data)
    assert "reads the files it changes" in found["message"] and "steps" in found["message"]
    roomy = build(manifest(category="cost", max_steps=12, requires={"steps": {"max": 3}}),
                  name="roomy", holdout=STRICT_HOLDOUT)
    rc, data, _ = prove(str(roomy), "--only", "oracle", cache=cache)
    assert rc == 0 and set(outcomes(data).values()) == {"pass"}, data
