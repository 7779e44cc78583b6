"""``endstate-author prove``: the command-line face of :mod:`endstate_author.prove`.

Exit codes: 0 when every check passed (or was skipped with a reason), 1 when any check
found a defect, 2 when any check was unassessed (ES908) or the input was unusable.
"""

from __future__ import annotations

import json
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from endstate_author.cli import OutputFormat, emit


class SandboxChoice(StrEnum):
    docker = "docker"
    local = "local"
    auto = "auto"


class Only(StrEnum):
    directions = "directions"
    holdout = "holdout"
    defects = "defects"
    oracle = "oracle"
    guards = "guards"
    probes = "probes"


_MARK = {
    "pass": "[green]pass[/]",
    "fail": "[bold red]FAIL[/]",
    "unassessed": "[yellow]unassessed[/]",
    "skipped": "[dim]skipped[/]",
}


def _rows(proof):  # type: ignore[no-untyped-def]
    """Table rows: every check, except that a group of more than three checks that all
    passed (the probes, typically) is one row saying so."""
    groups: dict[str, list] = {}  # type: ignore[type-arg]
    for check in proof.checks:
        groups.setdefault(check.group, []).append(check)
    for checks in groups.values():
        if len(checks) > 3 and all(c.outcome == "pass" for c in checks):
            seconds = sum(c.seconds for c in checks)
            yield f"{checks[0].group}: all {len(checks)} passed", "pass", seconds, ""
            continue
        for c in checks:
            yield c.check, c.outcome, c.seconds, c.detail if c.outcome != "pass" else ""


def _print_table(proofs, console) -> None:  # type: ignore[no-untyped-def]
    from rich.markup import escape
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
        for name, outcome, seconds, detail in _rows(proof):
            table.add_row(escape(name), _MARK[outcome], f"{seconds:.2f}s", escape(detail[:300]))
        console.print(table)
        console.print()


def _print_progress(task_id: str, check: str) -> None:
    print(f"checking: {task_id}: {check}", file=sys.stderr, flush=True)


def summary_line(proofs) -> str:  # type: ignore[no-untyped-def]
    checks = [c for p in proofs for c in p.checks]
    count = {
        o: sum(c.outcome == o for c in checks) for o in ("pass", "fail", "unassessed", "skipped")
    }
    tasks_bad = sum(any(c.outcome == "fail" for c in p.checks) for p in proofs)
    return (
        f"{len(proofs)} task(s): {count['pass']} checks passed, {count['fail']} failed, "
        f"{count['unassessed']} unassessed, {count['skipped']} skipped; "
        f"{tasks_bad} task(s) with findings"
    )


def prove_command(
    paths: Annotated[list[Path], typer.Argument(help="Task folders, suites or task.json files.")],
    sandbox: Annotated[
        SandboxChoice,
        typer.Option("--sandbox", help="Where checks run (auto: docker if it answers)."),
    ] = SandboxChoice.auto,
    image: Annotated[
        str | None, typer.Option("--image", help="Docker image for --sandbox docker.")
    ] = None,
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
    output_format: Annotated[
        OutputFormat, typer.Option("--output-format", "-o", help="How results are printed.")
    ] = OutputFormat.text,
    progress_lines: Annotated[
        bool,
        typer.Option(
            "--progress-lines", help="Print 'checking: TASK: CHECK' lines on stderr (editors)."
        ),
    ] = False,
) -> None:
    """Run the discrimination checks (codes ES901–ES910) on tasks."""
    from rich.console import Console

    from endstate_author.lint import UsageError, resolve_targets
    from endstate_author.prove import ProveOptions, choose_sandbox, default_jobs, prove_paths

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
    spec, note = choose_sandbox(None if sandbox is SandboxChoice.auto else sandbox.value, image)
    if note:
        typer.echo(note, err=True)
    options = ProveOptions(
        sandbox=spec,
        jobs=jobs or default_jobs(),
        only=tuple(o.value for o in (only or [])),
        use_cache=not no_cache,
        repeat=repeat,
        on_check=_print_progress if progress_lines else None,
    )
    err = Console(stderr=True)
    text = output_format is OutputFormat.text
    if text and err.is_terminal:
        from rich.progress import Progress

        with Progress(console=err, transient=True) as progress:
            bar = progress.add_task("proving", total=len(targets))
            proofs = prove_paths(
                [t for t, _ in targets], options, on_task=lambda p: progress.advance(bar)
            )
    else:
        proofs = prove_paths([t for t, _ in targets], options)
    diagnostics = [d for p in proofs for d in p.diagnostics]
    if output_format is OutputFormat.json:
        typer.echo(
            json.dumps(
                {
                    "diagnostics": [d.to_json() for d in diagnostics],
                    "tasks": [p.to_json() for p in proofs],
                },
                indent=2,
            )
        )
    elif text:
        out = Console(file=sys.stdout, highlight=False, soft_wrap=True)
        _print_table(proofs, out)
        emit(diagnostics, output_format, summary_line(proofs))
    else:
        emit(diagnostics, output_format, None)
    if any(p.unassessed for p in proofs):
        raise typer.Exit(2)
    raise typer.Exit(1 if any(d.severity == "error" for d in diagnostics) else 0)
