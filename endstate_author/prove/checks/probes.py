"""probes: every reward hack of the catalogue must be rejected (ES906)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from endstate_author.probes.catalogue import PROBES, injection_targets
from endstate_author.probes.store import ProbeError, SuiteProbe, suite_probes
from endstate_author.prove.grading import grade_end_state, least_counters
from endstate_author.prove.model import (
    GRADING_INPUTS,
    Check,
    CheckGroup,
    CheckResult,
    Job,
    Plan,
    ProveContext,
    Unassessed,
    make_job,
)
from endstate_harness.task import Task


def probe_check(probe: Any, targets: list[str], test_dir: str, stubs: Sequence[str]) -> Check:
    """``stubs``: the files to lay over the fixture empty first (the solution's new files),
    none for the plain probe."""
    label = f"probe {probe.id}" + (" (with stubs)" if stubs else "")

    def check(ctx: ProveContext) -> CheckResult:
        task = ctx.task

        def mutate(live: Path) -> list[str]:
            for rel in stubs:
                target = live / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text("", encoding="utf-8")
            return list(probe.apply(live, targets, test_dir))

        counters, stop = least_counters(task)
        graded = grade_end_state(
            task,
            ctx.spec,
            mutate=mutate,
            counters=counters,
            stop_reason=stop,
            search_paths=ctx.search_paths,
            until_rejected=True,  # the one question is whether any grader rejects it
        )
        if graded.verdict.passed:
            files = ", ".join(graded.written) or "nothing"
            note = ""
            if probe.id in ("always-equal", "read-the-test"):
                note = (
                    " — only the holdout can stop this one: assert exact types "
                    "(`type(r) is str`) and keep expected values in data"
                )
            return CheckResult(
                label,
                "probes",
                "fail",
                code="ES906",
                detail=f"the graders accept {probe.id} (wrote {files}){note}",
            )
        return CheckResult(label, "probes", "pass")

    return check


def suite_probe_check(
    probe: SuiteProbe | ProbeError, targets: list[str], test_dir: str, stubs: Sequence[str]
) -> Check:
    """A saved probe: skipped where it does not fit the task, else exactly a built-in's check."""

    def check(ctx: ProveContext) -> CheckResult:
        if isinstance(probe, ProbeError):
            raise Unassessed(str(probe))
        label = f"probe {probe.id}" + (" (with stubs)" if stubs else "")
        why = probe.applies(ctx.task.fixture, targets, test_dir)
        if why is not None:
            return CheckResult(label, "probes", "skipped", detail=f"does not apply: {why}")
        return probe_check(probe, targets, test_dir, stubs)(ctx)

    return check


def _added_by_solution(task: Task) -> list[str]:
    if task.solution is None:
        return []
    added = []
    for path in sorted(task.solution.rglob("*")):
        if path.is_file() and not path.is_symlink():
            rel = path.relative_to(task.solution).as_posix()
            if not (task.fixture / rel).exists():
                added.append(rel)
    return added


def _test_dir(task: Task) -> str:
    """The fixture's test folder, as the test command names it (``tests`` by default)."""
    for spec in task.graders:
        start = spec.args.get("start_dir")
        if isinstance(start, str) and start:
            return start
        command = spec.args.get("command")
        if isinstance(command, str):
            words = command.split()
            for flag in ("-s", "--start-directory"):
                if flag in words and words.index(flag) + 1 < len(words):
                    return words[words.index(flag) + 1]
    return "tests"


def jobs(task: Task, _plan: Plan) -> Iterator[Job]:
    if task.category == "permissioning":
        return
    targets = injection_targets(task.fixture)
    test_dir = _test_dir(task)
    # the stubs variant lays the solution's new files over the fixture as empty files: with no
    # new file it is the plain probe again, the same end state, so it is not planned twice
    added = _added_by_solution(task)
    variants: list[list[str]] = [[], added] if added else [[]]
    for probe in PROBES:
        for stubs in variants:
            check = probe_check(probe, targets, test_dir, stubs)
            yield make_job(
                "probes", f"probe {probe.id}" + (" (with stubs)" if stubs else ""), check
            )
    for saved in suite_probes(task):
        name = saved.id if isinstance(saved, SuiteProbe) else "suite probe"
        for stubs in variants:
            yield make_job(
                "probes",
                f"probe {name}" + (" (with stubs)" if stubs else ""),
                suite_probe_check(saved, targets, test_dir, stubs),
            )


def skipped(task: Task, _plan: Plan) -> list[CheckResult]:
    if task.category != "permissioning":
        return []
    return [
        CheckResult(
            "probes",
            "probes",
            "skipped",
            detail="a permissioning task changes nothing to probe",
        )
    ]


GROUP = CheckGroup(
    name="probes",
    codes=("ES906",),
    inputs=(*GRADING_INPUTS, "suite-probes"),
    jobs=jobs,
    skipped=skipped,
    summary="every known reward hack (and the suite's saved probes) is rejected",
)
