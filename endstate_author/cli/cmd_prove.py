"""``endstate-author prove``: the command-line face of :mod:`endstate_author.prove`.

The typer command is the one definition of prove's interface (options, help, usage errors);
what it runs and prints is :mod:`endstate_author.cli.prove_command`'s, which a plain command
line reaches without typer (``cli.main``).
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from endstate_author.cli.output import OutputFormat
from endstate_author.cli.prove_command import run
from endstate_author.cli.prove_report import exit_code, mutation_text, summary_line
from endstate_author.cli.sandboxes import DEFAULT_KIND, ImageOption, SandboxOption
from endstate_author.prove import CHECK_GROUPS, DEFAULT_MUTANT_BUDGET, DEFAULT_MUTANTS
from endstate_author.prove.model import DEFAULT_COUNTEREXAMPLE_BUDGET

__all__ = ["Only", "exit_code", "mutation_text", "prove_tasks_command", "summary_line"]


class ExecutorName(StrEnum):
    local = "local"
    ray = "ray"


Only = StrEnum("Only", {name: name for name in CHECK_GROUPS})  # type: ignore[misc]
"""``--only``'s choices: the check groups, as :mod:`endstate_author.prove.checks` lists them."""


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
    raise typer.Exit(run(
        paths,
        sandbox=sandbox,
        image=image,
        jobs=jobs,
        only=[o.value for o in (only or [])],
        no_cache=no_cache,
        repeat=repeat,
        mutants=mutants,
        mutant_budget=mutant_budget,
        counterexample_budget=counterexample_budget,
        strict=strict,
        output_format=output_format,
        quiet=quiet,
        progress_lines=progress_lines,
        progress_json=progress_json,
        mutation_report=mutation_report,
        executor=executor.value,
        address=address,
    ))
