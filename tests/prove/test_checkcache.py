"""The per-check cache through the real CLI: an edit re-runs only the checks that read it.

A check that runs stores its result under a key of its own inputs, so the entries a prove
adds to ``checks/`` are exactly the checks it ran (none is unassessed here).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from endstate_author.assist.proof import cached_proof
from endstate_author.prove import checkcache
from endstate_author.prove.model import CheckResult, Job, ProveContext, ProveOptions
from endstate_author.prove.wire import WIRE_VERSION
from endstate_harness.sandbox.choice import SandboxChoice
from endstate_harness.task import load_task
from tests.prove.test_prove import STRICT_HOLDOUT, manifest, outcomes, prove
from tests.rules.conftest import SOLUTION, TaskBuilder

GROUPS = ("--only", "directions", "--only", "holdout", "--only", "oracle", "--only", "defects")


def _entries(cache: Path) -> set[str]:
    folder = cache / "checks"
    return {p.name for p in folder.iterdir()} if folder.is_dir() else set()


@pytest.fixture
def task(tmp_path: Path) -> Path:
    build = TaskBuilder(tmp_path / "suite")
    root = build(manifest(), holdout=STRICT_HOLDOUT)
    defect = root / "defects" / "no-tail" / "chunker"
    defect.mkdir(parents=True)
    (defect / "core.py").write_text(
        "def chunk(items, size):\n"
        "    return [items[i:i + size] for i in range(0, len(items) - size + 1, size)]\n"
    )
    return root


def test_an_edit_re_runs_only_the_checks_that_read_it(task: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    rc, first, _ = prove(str(task), *GROUPS, cache=cache)
    assert rc == 0, first
    ran = _entries(cache)
    checks = [c for c in outcomes(first) if outcomes(first)[c] != "skipped"]
    assert len(ran) == len(checks) >= 5

    # the prompt: read by the oracle's run only (its budget and token counts include it)
    (task / "prompt.md").write_text((task / "prompt.md").read_text() + "\nOne more line.\n")
    rc, second, _ = prove(str(task), *GROUPS, cache=cache)
    assert rc == 0 and outcomes(second) == outcomes(first)
    assert len(_entries(cache) - ran) == 1  # "oracle through the harness"
    ran = _entries(cache)

    # a defect: read by the defect checks only
    (task / "defects" / "no-tail" / "README").write_text("drops the last short chunk\n")
    rc, third, _ = prove(str(task), *GROUPS, cache=cache)
    assert rc == 0 and outcomes(third) == outcomes(first)
    assert len(_entries(cache) - ran) == 1
    ran = _entries(cache)

    # the fixture: read by every check, and its result changes (ES901)
    (task / "fixture" / "chunker" / "core.py").write_text(SOLUTION["chunker/core.py"])
    rc, fourth, _ = prove(str(task), *GROUPS, cache=cache)
    assert rc == 1 and outcomes(fourth)["fixture fails"] == "fail"
    assert len(_entries(cache) - ran) == len(checks)


def test_no_cache_and_repeat_store_nothing(task: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    prove(str(task), "--only", "directions", "--no-cache", cache=cache)
    prove(str(task), "--only", "directions", "--repeat", "2", cache=cache)
    assert _entries(cache) == set()


def _events(err: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in err.splitlines() if line.startswith("{")]


def test_holdout_edit_streams_and_spares_the_visible_check(task: Path, tmp_path: Path) -> None:
    """``--progress-json`` says which checks ran and which the cache answered; the holdout is
    staged by every grading but the visible check's, which keeps its result. The editor's
    view of the cache (:func:`cached_proof`) agrees with what prove then runs."""
    cache = tmp_path / "cache"
    groups = ("--only", "directions", "--only", "holdout", "--only", "visible")
    rc, first, err = prove(str(task), *groups, "--progress-json", cache=cache)
    events = _events(err)
    assert rc == 0 and events[0] == {
        "event": "sandbox", "wire_version": WIRE_VERSION, "kind": "local", "image": None,
        "reason": "--sandbox local",
        **SandboxChoice("local", reason="--sandbox local").describe(),  # walls, and why not
    }
    done = [e for e in events if e["event"] == "done"]
    assert len(done) == 5 and not any(e["result"]["cached"] for e in done)  # type: ignore[index]

    holdout = next((task / "holdout").rglob("test_*.py"))
    holdout.write_text(holdout.read_text() + "\n# one more comment\n")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ENDSTATE_AUTHOR_CACHE", str(cache))
        known = cached_proof(task, SandboxChoice("local"),
                             only=["directions", "holdout", "visible"])
    assert known is not None
    assert list(known.results) == ["visible tests fail on the fixture"]
    assert sorted(known.pending) == ["fixture fails", "holdout sentinel", "same verdict under "
                                     "another hash seed and test order", "solution passes"]

    rc, second, err = prove(str(task), *groups, "--progress-json", cache=cache)
    assert rc == 0 and outcomes(second) == outcomes(first)
    events = _events(err)
    ran = sorted(str(e["check"]) for e in events if e["event"] == "start")
    assert ran == sorted(known.pending)
    cached = [e["check"] for e in events if e["event"] == "done" and e["result"]["cached"]]  # type: ignore[index]
    assert cached == ["visible tests fail on the fixture"]


def test_a_result_of_files_edited_during_its_check_is_not_stored(
    task: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A save while a check runs (the editor cancels, but the check may still end): the
    result may be of the new files, so it is not filed under the old files' key."""
    monkeypatch.setenv("ENDSTATE_AUTHOR_CACHE", str(tmp_path / "cache"))
    loaded = load_task(task)
    options = ProveOptions()
    holdout = next((task / "holdout").rglob("test_*.py"))

    def edits_meanwhile(ctx: ProveContext) -> CheckResult:
        holdout.write_text(holdout.read_text() + "\n# saved during the check\n")
        return CheckResult("solution passes", "directions", "pass")

    def plain(ctx: ProveContext) -> CheckResult:
        return CheckResult("fixture fails", "directions", "pass")

    jobs: list[Job] = [
        ("directions", "solution passes", edits_meanwhile),
        ("directions", "fixture fails", plain),
    ]
    ctx = ProveContext(loaded, options.sandbox, [])
    for _, _, fn in checkcache.cached_jobs(loaded, options, jobs):
        assert not fn(ctx).cached
    # both keys were made before the edit, which both checks' inputs (the holdout) saw
    assert _entries(tmp_path / "cache") == set()

    # the near miss: nothing edited, both stored, and answered from the cache next time
    steady: list[Job] = [("directions", "fixture fails", plain)]
    for _, _, fn in checkcache.cached_jobs(loaded, options, steady):
        assert not fn(ctx).cached
    for _, _, fn in checkcache.cached_jobs(loaded, options, steady):
        assert fn(ctx).cached
    assert len(_entries(tmp_path / "cache")) == 1
