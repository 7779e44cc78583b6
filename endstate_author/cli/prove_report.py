"""``endstate-author prove``'s report: the table, the summary line, the mutation score, the
JSON, SARIF and GitHub outputs, and the exit status.

rich draws the text report only: it is imported when the text report is drawn, or ahead of it
(:func:`preload`) while the checks run, so that its ~50 ms are not on a one-check prove's path.
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from endstate_author.cli.output import OutputFormat, echo, emit
from endstate_author.engine.textsafe import markup as escape  # shown, never obeyed
from endstate_author.lint import formats
from endstate_author.prove import TaskProof
from endstate_author.prove.wire import encode_report
from endstate_harness.sandbox.choice import SandboxChoice

if TYPE_CHECKING:
    from rich.console import Console


def preload() -> threading.Thread:
    """Import rich's console and table in a background thread, for a text report that will be
    drawn once the checks are done: the checks mostly wait for their sandboxes (other
    processes), and the import fills that wait instead of following it."""
    thread = threading.Thread(target=_import_rich, name="endstate-rich-preload", daemon=True)
    thread.start()
    return thread


def _import_rich() -> None:
    try:
        # deferred: the point of this thread (see preload)
        import rich.console
        import rich.table  # noqa: F401  (deferred, as above)
    except Exception:  # a preload only: the report imports it again and says what is wrong
        pass


_MARK = {
    "pass": "[green]pass[/]",
    "fail": "[bold red]FAIL[/]",
    "unassessed": "[yellow]unassessed[/]",
    "skipped": "[dim]skipped[/]",
}


def _rows(proof: TaskProof) -> Iterator[tuple[str, str, float, str, str]]:
    """Table rows: every check, except that a group of more than three checks that all
    passed (the probes, typically), or were all skipped for one reason (the mutants of a
    solution that fails), is one row saying so, and the mutants a time budget left unrun are
    one row naming them."""
    groups: dict[str, list] = {}  # type: ignore[type-arg]
    for check in proof.checks:
        groups.setdefault(check.group, []).append(check)
    for checks in groups.values():
        unrun = [c for c in checks if c.unrun]
        checks = [c for c in checks if not c.unrun]
        seconds = sum(c.seconds for c in checks)
        if len(checks) > 3 and all(c.outcome == "pass" for c in checks):
            walls = "none" if any(c.walls == "none" for c in checks) else ""
            yield f"{checks[0].group}: all {len(checks)} passed", "pass", seconds, "", walls
        elif len(checks) > 3 and len({(c.outcome, c.detail) for c in checks}) == 1 and (
            checks[0].outcome == "skipped"
        ):
            yield (f"{checks[0].group}: {len(checks)} skipped", "skipped", seconds,
                   checks[0].detail, "")  # fmt: skip
        else:
            for c in checks:
                yield (c.check, c.outcome, c.seconds, c.detail if c.outcome != "pass" else "",
                       c.walls)
        if unrun:
            ids = ", ".join(c.check.split()[1] for c in unrun)
            yield (f"{len(unrun)} mutant(s) not run", "skipped", 0.0,
                   f"{unrun[0].detail.removeprefix('not run: ')}: {ids}", "")  # fmt: skip


def _print_table(proofs: Sequence[TaskProof], console: Console) -> None:
    # deferred: rich's table (~15 ms), drawn only for the text output, at the end
    from rich.table import Table

    for proof in proofs:
        table = Table(
            title=f"{proof.task_id}" + (" (cached)" if proof.cached else ""),
            title_justify="left",
            show_edge=False,
            pad_edge=False,
        )
        table.add_column("check")
        table.add_column("outcome")
        table.add_column("time", justify="right")
        table.add_column("detail", overflow="fold")
        for name, outcome, seconds, detail, walls in _rows(proof):
            mark = _MARK[outcome] + (" (no walls)" if walls == "none" else "")
            table.add_row(escape(name), mark, f"{seconds:.2f}s", escape(detail))
        console.print(table)
        if proof.mutation is not None:
            console.print(escape(f"{proof.task_id}: {mutation_text(proof.mutation)}"))
        console.print()


def mutation_text(score: dict[str, Any]) -> str:
    """The mutation score line of one task (text and github outputs): the task's score only
    when every mutant ran, else plainly a sample's."""
    extra = []
    if score.get("survived"):
        extra.append(f"{score['survived']} survived")
    if score.get("unassessed"):
        extra.append(f"{score['unassessed']} unassessed")
    if score.get("equivalent"):
        extra.append(f"{score['equivalent']} marked equivalent")
    if score.get("sampled_out"):
        extra.append(f"{score['sampled_out']} sampled out (their line's first mutants killed)")
    tail = f" ({', '.join(extra)})" if extra else ""
    searched = score.get("counterexample_search")
    if searched:
        tail += (
            f"; counterexample search: {searched['counterexamples']} of "
            f"{searched['survivors']} survivors told from the solution (ES911), "
            f"{searched['probably_equivalent']} probably equivalent (ES916), "
            f"{searched['calls_tried']} calls, {searched['seconds']:.1f} s of "
            f"{searched['budget']:g} s (--counterexample-budget)"
        )
    if score.get("complete", not score.get("not_run")):
        return (
            f"mutation score {score['killed']}/{score['run']} killed{tail} "
            f"of {score['generated']} generated"
        )
    budget = score.get("over_budget") or 0
    why = []
    if budget:
        why.append(f"{budget} over the time budget (--mutant-budget)")
    if score["not_run"] - budget:
        why.append(f"{score['not_run'] - budget} over --mutants")
    return (
        f"mutation score unknown: only {score['run']} of {score['generated']} mutants ran "
        f"({score['not_run']} not run: {', '.join(why)}); of those run, {score['killed']} "
        f"killed{tail}"
    )


def _sarif(proofs: Sequence[TaskProof], spec: SandboxChoice) -> str:
    """SARIF with the sandbox and each task's mutation score in the run's property bag."""
    document = formats.to_sarif([d for p in proofs for d in p.diagnostics])
    properties: dict[str, Any] = {"sandbox": spec.describe()}
    scores = {p.task_id: p.mutation for p in proofs if p.mutation is not None}
    if scores:
        properties["mutationScores"] = scores
    walls = {p.task_id: p.walls for p in proofs if p.walls}
    if walls:
        properties["walls"] = walls  # "none": graded without walls
    unwalled = {str(p.path) for p in proofs if p.walls == "none"}
    for result in document["runs"][0]["results"]:
        places = result.get("locations") or [{}]
        uri = str(places[0].get("physicalLocation", {}).get("artifactLocation", {}).get("uri"))
        if unwalled and result.get("ruleId", "").startswith("ES9") and any(
                root in uri or Path(root).as_uri() in uri for root in unwalled):
            result.setdefault("properties", {})["walls"] = "none"
    document["runs"][0]["properties"] = properties
    return formats.dumps(document)


def summary_line(proofs: Sequence[TaskProof]) -> str:
    """One line counting every outcome; never "0 task(s) with findings" while checks could
    not run, since those tasks are not proved clean."""
    checks = [c for p in proofs for c in p.checks]
    count = {
        o: sum(c.outcome == o for c in checks) for o in ("pass", "fail", "unassessed", "skipped")
    }
    tasks_bad = sum(any(c.outcome == "fail" for c in p.checks) or _static_error(p)
                    for p in proofs)
    line = (
        f"{len(proofs)} task(s): {count['pass']} checks passed, {count['fail']} failed, "
        f"{count['unassessed']} unassessed, {count['skipped']} skipped"
    )
    if tasks_bad:
        line += f"; {tasks_bad} task(s) with findings"
    if count["unassessed"]:
        unproved = sum(p.unassessed for p in proofs)
        line += (
            f"; {count['unassessed']} check(s) could not run (ES908), so {unproved} task(s) "
            "are not proved"
        )
    elif not tasks_bad:
        line += "; no findings"
    return line


def _static_error(proof: TaskProof) -> bool:
    """Whether the proof carries a static error beside its checks (ES414: an entry of the
    task's trees no sandbox can use)."""
    return any(d.severity == "error" and d.code < "ES9" for d in proof.diagnostics)


def exit_code(proofs: Sequence[TaskProof]) -> int:
    """1 when any check failed with an error (findings, even beside unassessed checks) or a
    static error stands beside the checks, else 2 when any could not run, else 0. A warning
    (ES912 without ``--strict``, ES311) exits 0."""
    if any(c.outcome == "fail" and c.severity == "error" for p in proofs for c in p.checks):
        return 1
    if any(_static_error(p) for p in proofs):
        return 1
    return 2 if any(p.unassessed for p in proofs) else 0


def print_report(
    proofs: Sequence[TaskProof], spec: SandboxChoice, output_format: OutputFormat
) -> None:
    """The report of ``proofs`` on stdout, in ``output_format``."""
    diagnostics = [d for p in proofs for d in p.diagnostics]
    if output_format is OutputFormat.json:
        # the one versioned record of prove's results (what editors and scripts read back)
        echo(json.dumps(encode_report(spec, diagnostics, proofs), indent=2))
    elif output_format is OutputFormat.text:
        # deferred: rich (~50 ms), for the text report only, drawn once the checks are done
        from rich.console import Console

        out = Console(file=sys.stdout, highlight=False, soft_wrap=True)
        if not out.is_terminal:
            # in a pipe, a file or a CI log a table is as wide as its widest row: wrapped at
            # 80 columns, an identifier was cut in the middle (HoldoutLRUCacheTest.test_capac
            # / ity_must_be_positive), which no reader can search for
            out = Console(file=sys.stdout, highlight=False, soft_wrap=True, width=10_000,
                          no_color=True)
        _print_table(proofs, out)
        emit(diagnostics, output_format, summary_line(proofs))
    elif output_format is OutputFormat.sarif:
        echo(_sarif(proofs, spec))
    else:
        emit(diagnostics, output_format, None)
        for proof in proofs:
            if proof.mutation is not None:
                echo(
                    f"::notice title=mutation score {proof.task_id}::"
                    f"{mutation_text(proof.mutation)}"
                )


