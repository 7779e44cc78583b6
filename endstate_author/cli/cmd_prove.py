"""``endstate-author prove``: the command-line face of :mod:`endstate_author.prove`."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator, Sequence
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

import endstate_author.cli.progress as progress
from endstate_author.cli.output import OutputFormat, emit
from endstate_author.cli.sandboxes import DEFAULT_KIND, ImageOption, SandboxOption, choose
from endstate_author.engine.textsafe import markup as escape  # shown, never obeyed
from endstate_author.engine.textsafe import one_line
from endstate_author.executors import ExecutorChoice, ExecutorError, choose_executor, load_ray
from endstate_author.lint import formats
from endstate_author.lint.run import UsageError, resolve_targets
from endstate_author.prove import (
    CHECK_GROUPS,
    DEFAULT_MUTANT_BUDGET,
    DEFAULT_MUTANTS,
    ProveOptions,
    TaskProof,
    default_jobs,
    prove_paths,
)
from endstate_author.prove.model import DEFAULT_COUNTEREXAMPLE_BUDGET
from endstate_author.prove.wire import encode_report
from endstate_harness.sandbox.choice import SandboxChoice


class ExecutorName(StrEnum):
    local = "local"
    ray = "ray"


Only = StrEnum("Only", {name: name for name in CHECK_GROUPS})  # type: ignore[misc]
"""``--only``'s choices: the check groups, as :mod:`endstate_author.prove.checks` lists them."""


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
    if score.get("timed_out"):
        extra.append(f"{score['timed_out']} of the killed timed out (cut at their time bound)")
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


def _write_mutation_report(proofs: Sequence[TaskProof], folder: Path) -> None:
    """``--mutation-report DIR``: the report's JSON and HTML view, said on stderr (stdout
    stays the chosen output's)."""
    # deferred: the report's module (task loading, mutant generation) only when asked for
    from endstate_author.prove import mutation_report

    try:
        written, page = mutation_report.write(proofs, folder)
    except OSError as exc:
        typer.echo(f"endstate-author: cannot write the mutation report to {folder}: {exc}",
                   err=True)
        raise typer.Exit(2) from None
    typer.echo(one_line(f"mutation report: {written}"), err=True)
    if page is None:
        typer.echo(
            "endstate-author: no HTML view: this install does not carry the "
            "mutation-testing-elements component (a wheel does; in a checkout, run "
            "`make web-assets`)", err=True)
    else:
        typer.echo(one_line(f"mutation report view: {page}"), err=True)


def _print_progress(task_id: str, check: str) -> None:
    print(one_line(f"checking: {task_id}: {check}"), file=sys.stderr, flush=True)


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


def _prove(
    remote: Callable[..., list[TaskProof]] | None,
    choice: ExecutorChoice,
    targets: Sequence[tuple[Path, Path | None]],
    options: ProveOptions,
    on_task: Callable[[TaskProof], None] | None,
) -> list[TaskProof]:
    """On this machine, or on the Ray cluster ``choice`` names."""
    paths = [t for t, _ in targets]
    if remote is None:
        return prove_paths(paths, options, on_task=on_task)
    try:
        return remote(paths, options, choice, on_task=on_task)
    except ExecutorError as exc:
        typer.echo(f"endstate-author: {exc}", err=True)
        raise typer.Exit(2) from None


def prove_tasks_command(
    paths: Annotated[list[Path], typer.Argument(help="Task folders, suites or task.json files.")],
    sandbox: SandboxOption = DEFAULT_KIND,
    image: ImageOption = None,
    jobs: Annotated[
        int | None, typer.Option("--jobs", "-j", min=1, help="Checks run at once (default: cores).")
    ] = None,
    only: Annotated[
        list[Only] | None, typer.Option("--only", help="Run only these check groups (repeatable).")
    ] = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Ignore cached results.")] = False,
    repeat: Annotated[
        int, typer.Option("--repeat", min=1, help="Repeat every check; disagreement is ES909.")
    ] = 1,
    mutants: Annotated[
        int | None,
        typer.Option(
            "--mutants",
            min=0,
            help="At most this many mutants of the solution per task (ES911; 0: none; "
            "default: every one, within --mutant-budget).",
        ),
    ] = DEFAULT_MUTANTS,
    mutant_budget: Annotated[
        float,
        typer.Option(
            "--mutant-budget",
            min=0.0,
            help="Seconds a task's mutants may take (ES911); those not started by then are "
            "named as not run, and the score is then a sample's.",
        ),
    ] = DEFAULT_MUTANT_BUDGET,
    counterexample_budget: Annotated[
        float,
        typer.Option(
            "--counterexample-budget",
            min=0.0,
            help="Seconds a task's search for calls that tell its surviving mutants from the "
            "solution may take: a survivor with such a call is ES911 (an error, the call "
            "shown), one without is ES916 (a warning); 0 searches none.",
        ),
    ] = DEFAULT_COUNTEREXAMPLE_BUDGET,
    strict: Annotated[
        bool, typer.Option("--strict", help="Warnings (ES912, ES916) are errors (exit 1).")
    ] = False,
    output_format: Annotated[
        OutputFormat, typer.Option("--output-format", "-o", help="How results are printed.")
    ] = OutputFormat.text,
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="No progress on stderr (results only).")
    ] = False,
    progress_lines: Annotated[
        bool,
        typer.Option(
            "--progress-lines", help="Print 'checking: TASK: CHECK' lines on stderr (editors)."
        ),
    ] = False,
    progress_json: Annotated[
        bool,
        typer.Option(
            "--progress-json",
            help="Print one JSON object per line on stderr as each check starts and ends, "
            "with its result (editors showing findings as they come).",
        ),
    ] = False,
    mutation_report: Annotated[
        Path | None,
        typer.Option(
            "--mutation-report",
            metavar="DIR",
            help="Also write the mutants to DIR: mutation-report.json in the mutation-testing "
            "report schema (Stryker's), each survivor's counterexample in it, and "
            "mutation-report.html, a view of every mutant on its line (works offline).",
        ),
    ] = None,
    executor: Annotated[
        ExecutorName,
        typer.Option("--executor", help="Where tasks are proved: this machine, or a Ray cluster."),
    ] = ExecutorName.local,
    address: Annotated[
        str | None,
        typer.Option(
            "--address",
            help="Ray cluster (HOST:PORT, ray://HOST:PORT, or auto = $RAY_ADDRESS); "
            "without it --executor ray starts a local Ray instance.",
        ),
    ] = None,
) -> None:
    """Run the discrimination checks (codes ES901–ES915) on tasks."""
    try:
        targets = resolve_targets(paths)
    except UsageError as exc:
        typer.echo(f"endstate-author: {exc}", err=True)
        raise typer.Exit(2) from None
    if not targets:
        typer.echo(
            "endstate-author: no task.json found under " + ", ".join(map(str, paths)), err=True
        )
        raise typer.Exit(2)
    if mutation_report is not None and mutation_report.exists() and not mutation_report.is_dir():
        # said before the proof, not after minutes of it
        typer.echo(f"endstate-author: --mutation-report {mutation_report}: not a folder",
                   err=True)
        raise typer.Exit(2)
    try:
        choice = choose_executor(executor.value, address)
        prove = load_ray(choice).prove_paths if choice.remote else None
    except ExecutorError as exc:
        typer.echo(f"endstate-author: {exc}", err=True)
        raise typer.Exit(2) from None
    # one message before any task starts, not one per check
    spec = choose(sandbox, image).for_grading()
    err = Console(stderr=True)
    # an editor asking for 'checking:' lines or JSON events reads them itself; no second kind
    # of progress
    shown: progress.LineProgress | progress.LiveProgress | progress.JsonProgress
    if progress_json:
        shown = progress.JsonProgress()
        shown.sandbox(spec)
    else:
        shown = progress.choose(targets, err, quiet=quiet or progress_lines)
    options = ProveOptions(
        sandbox=spec,
        jobs=jobs or default_jobs(),
        only=tuple(o.value for o in (only or [])),
        use_cache=not no_cache,
        repeat=repeat,
        on_check=_print_progress if progress_lines else shown.check_started,
        on_check_done=None if progress_lines and not progress_json else shown.check_done,
        mutants=mutants,
        mutant_budget=mutant_budget,
        counterexample_budget=counterexample_budget,
        strict=strict,
    )
    text = output_format is OutputFormat.text
    with shown:
        proofs = _prove(prove, choice, targets, options, shown.task_done)
    diagnostics = [d for p in proofs for d in p.diagnostics]
    if mutation_report is not None:
        _write_mutation_report(proofs, mutation_report)
    if output_format is OutputFormat.json:
        # the one versioned record of prove's results (what editors and scripts read back)
        typer.echo(json.dumps(encode_report(spec, diagnostics, proofs), indent=2))
    elif text:
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
        typer.echo(_sarif(proofs, spec))
    else:
        emit(diagnostics, output_format, None)
        for proof in proofs:
            if proof.mutation is not None:
                typer.echo(
                    f"::notice title=mutation score {proof.task_id}::"
                    f"{mutation_text(proof.mutation)}"
                )
    raise typer.Exit(exit_code(proofs))
