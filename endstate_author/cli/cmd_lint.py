"""``endstate-author lint``: every static defect of the tasks under PATHS (codes ES0–ES5)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from endstate_author.cli.output import OutputFormat, emit, fail
from endstate_author.engine.config import ConfigError
from endstate_author.engine.fixes import plan_fixes, render_diff, write_plan
from endstate_author.lint.cache import LintCache
from endstate_author.lint.fast import report
from endstate_author.lint.run import UsageError, lint_paths


def lint(
    paths: Annotated[
        list[Path] | None,
        typer.Argument(help="Task folders, suite folders or task.json files (default: .)."),
    ] = None,
    output_format: Annotated[
        OutputFormat, typer.Option("--output-format", "-o", help="How findings are printed.")
    ] = OutputFormat.text,
    strict: Annotated[bool, typer.Option("--strict", help="Warnings count as errors.")] = False,
    fix: Annotated[bool, typer.Option("--fix", help="Apply the safe fixes.")] = False,
    diff: Annotated[
        bool, typer.Option("--diff", help="Show what --fix would change, write nothing.")
    ] = False,
    config: Annotated[
        Path | None, typer.Option("--config", help="Use this pyproject.toml's configuration.")
    ] = None,
    isolated: Annotated[bool, typer.Option("--isolated", help="Ignore every config file.")] = False,
    select: Annotated[
        list[str] | None, typer.Option("--select", help="Only these code prefixes (repeatable).")
    ] = None,
    ignore: Annotated[
        list[str] | None, typer.Option("--ignore", help="Skip these code prefixes (repeatable).")
    ] = None,
    exit_zero: Annotated[
        bool, typer.Option("--exit-zero", help="Exit 0 even when findings count.")
    ] = False,
    no_cache: Annotated[
        bool,
        typer.Option(
            "--no-cache",
            help="Lint every task, and neither read nor write the cache "
            "(~/.cache/endstate-author/lint, or $ENDSTATE_AUTHOR_LINT_CACHE).",
        ),
    ] = False,
) -> None:
    """Report every static defect of the tasks under PATHS (codes ES0–ES5)."""
    targets = paths or [Path(".")]
    options = dict(
        config_file=config,
        isolated=isolated,
        select=[s for item in (select or []) for s in item.split(",") if s],
        ignore=[s for item in (ignore or []) for s in item.split(",") if s],
    )
    # --fix and --diff lint again after each write and apply the findings' edits: uncached
    cache = None if no_cache or fix or diff else LintCache.default()
    try:
        result = lint_paths(targets, cache=cache, **options)  # type: ignore[arg-type]
        if fix or diff:
            result = _fix(result, targets, options, write=fix and not diff)
    except (UsageError, ConfigError) as exc:
        raise fail(str(exc)) from None
    if not result.tasks:
        # nothing to lint is a usage error, as for prove: a typo'd path must not pass CI
        if result.diagnostics:  # a configuration finding, say
            emit(result.diagnostics, output_format, None)
        raise fail("no task.json found under " + ", ".join(map(str, targets)))
    status = report(
        result,
        output_format.value,
        strict=strict,
        exit_zero=exit_zero,
        echo=lambda text, err: typer.echo(text, err=err),
    )
    raise typer.Exit(status)


def _fix(result, targets, options, *, write):  # type: ignore[no-untyped-def]
    if not write:
        plan = plan_fixes(result.diagnostics)
        text = render_diff(plan)
        if text:
            sys.stdout.write(text)
        typer.echo(f"{len(plan.applied)} fix(es) would be applied.", err=True)
        return result
    total = []
    for _ in range(5):
        plan = plan_fixes(result.diagnostics)
        if plan.empty:
            break
        write_plan(plan)
        total.extend(plan.applied)
        result = lint_paths(targets, **options)
    for diag, fix in total:
        typer.echo(f"fixed {diag.code} in {diag.file}: {fix.title}", err=True)
    typer.echo(f"{len(total)} fix(es) applied.", err=True)
    return result
