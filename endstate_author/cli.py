"""The ``endstate-author`` command line.

Conventions follow ruff: ``lint PATH...`` with ``--output-format``, ``--fix``/``--diff``,
``--select``/``--ignore``, ``--config``/``--isolated``; exit 0 when clean, 1 on findings
that count, 2 on a usage or internal failure. Every failure of the input is a message,
never a traceback (``main`` is the last line of that defence).
"""

from __future__ import annotations

import signal
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from endstate_author import __version__

app = typer.Typer(
    name="endstate-author",
    help="Lint, prove and edit endstate evaluation tasks. No silent task.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


class OutputFormat(StrEnum):
    text = "text"
    json = "json"
    sarif = "sarif"
    github = "github"


def _fail(message: str, code: int = 2) -> typer.Exit:
    typer.echo(f"endstate-author: {message}", err=True)
    return typer.Exit(code)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"endstate-author {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Show the version.")
    ] = False,
) -> None:
    """Lint, prove and edit endstate evaluation tasks."""


def emit(diagnostics: list, output_format: OutputFormat, summary: str | None) -> None:  # type: ignore[type-arg]
    from endstate_author import formats

    if output_format is OutputFormat.json:
        typer.echo(formats.render_json(diagnostics))
    elif output_format is OutputFormat.sarif:
        typer.echo(formats.render_sarif(diagnostics))
    elif output_format is OutputFormat.github:
        text = formats.render_github(diagnostics)
        if text:
            typer.echo(text)
    else:
        formats.render_text(diagnostics, sys.stdout, summary=summary)


@app.command()
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
) -> None:
    """Report every static defect of the tasks under PATHS (codes ES0–ES5)."""
    from endstate_author.config import ConfigError
    from endstate_author.lint import UsageError, lint_paths

    targets = paths or [Path(".")]
    options = dict(
        config_file=config,
        isolated=isolated,
        select=[s for item in (select or []) for s in item.split(",") if s],
        ignore=[s for item in (ignore or []) for s in item.split(",") if s],
    )
    try:
        result = lint_paths(targets, **options)  # type: ignore[arg-type]
        if fix or diff:
            result = _fix(result, targets, options, write=fix and not diff)
    except (UsageError, ConfigError) as exc:
        raise _fail(str(exc)) from None
    if not result.tasks:
        typer.echo(
            "endstate-author: no task.json found under " + ", ".join(map(str, targets)), err=True
        )
    counted = result.errors + (result.warnings if strict else 0)
    summary = _summary(result.tasks, result.errors, result.warnings)
    if result.diagnostics or output_format is not OutputFormat.text:
        emit(result.diagnostics, output_format, summary)
    elif result.tasks:
        # a clean run prints nothing on stdout (scripts and hooks read stdout); say it on stderr
        typer.echo(f"All clear: {result.tasks} task(s) checked, no findings.", err=True)
    raise typer.Exit(1 if counted and not exit_zero else 0)


def _summary(tasks: int, errors: int, warnings: int) -> str:
    noun = "task" if tasks == 1 else "tasks"
    if not errors and not warnings:
        return f"[green]All clear:[/] {tasks} {noun} checked, no findings."
    return f"Found {errors} error(s) and {warnings} warning(s) in {tasks} {noun}."


def _fix(result, targets, options, *, write):  # type: ignore[no-untyped-def]
    from endstate_author.fixes import plan_fixes, render_diff, write_plan
    from endstate_author.lint import lint_paths

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


@app.command()
def rule(
    code: Annotated[str | None, typer.Argument(help="A code such as ES101.")] = None,
    all_: Annotated[bool, typer.Option("--all", help="List every rule.")] = False,
) -> None:
    """Print a rule's documentation (what it checks, why, an example, the fix)."""
    from endstate_author.rules.registry import RULES, all_rules
    from endstate_author.suggest import did_you_mean

    rules = all_rules()
    if all_ or code is None:
        for r in rules:
            sev = "E" if r.severity == "error" else "W"
            typer.echo(f"{r.code}  {sev}  {r.name:<32} {r.summary}")
        return
    found = RULES.get(code.strip().upper())
    if found is None:
        raise _fail(f"no rule {code!r}{did_you_mean(code.upper(), RULES)}")
    typer.echo(f"# {found.code} {found.name} ({found.severity})\n\n{found.doc}")


@app.command()
def schema() -> None:
    """Print the JSON Schema of task.json (the same file ships in the package)."""
    from endstate_author.schema import render_schema

    sys.stdout.write(render_schema())


@app.command()
def new(
    task_id: Annotated[str, typer.Argument(metavar="ID", help="The new task's id (kebab-case).")],
    category: Annotated[str, typer.Option("--category", "-c", help="The task's category.")],
    suite: Annotated[Path, typer.Option("--suite", help="Where to create it.")] = Path("tasks"),
) -> None:
    """Scaffold a task folder with the mandatory assertions in place."""
    from endstate_author.scaffold import ScaffoldError, create_task

    try:
        written = create_task(task_id, category, suite)
    except ScaffoldError as exc:
        raise _fail(str(exc)) from None
    except OSError as exc:
        raise _fail(f"cannot write under {suite}: {exc.strerror or exc}") from None
    for path in written:
        typer.echo(f"created {path}")
    typer.echo(
        f"next: edit {suite / task_id / 'prompt.md'}, then `endstate-author lint "
        f"{suite / task_id}` and `endstate-author prove {suite / task_id}`"
    )


@app.command()
def lsp(
    tcp: Annotated[
        str | None, typer.Option("--tcp", metavar="HOST:PORT", help="Listen on TCP, not stdio.")
    ] = None,
) -> None:
    """Start the language server (stdio by default)."""
    from endstate_lsp.server import main as serve

    serve(tcp=tcp)


def _wanted(*names: str) -> bool:
    """Whether this invocation may need these commands: importing the agent loop costs
    ~0.4 s, which ``lint`` and a cached ``prove`` should not pay."""
    args = [a for a in sys.argv[1:] if not a.startswith("-")]
    return not args or args[0] in names


def _register_optional() -> None:
    """Commands whose modules are heavier, registered only when they may be called."""
    if _wanted("eval", "run", "sessions"):
        from endstate_author import cli_eval

        app.command("eval")(cli_eval.eval_command)
        app.command("run")(cli_eval.run_command)
        app.command("sessions")(cli_eval.sessions_command)
    if _wanted("prove"):
        from endstate_author import cli_prove

        app.command("prove")(cli_prove.prove_command)
    if _wanted("hook"):
        try:
            from endstate_author import hooks
        except ImportError:
            return
        command = getattr(hooks, "hook_command", None)
        if command is not None:
            app.command("hook")(command)


_register_optional()


def _exit_on_signal(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)


def main() -> None:
    """Entry point: typer's exit codes, and no traceback for anything that escapes."""
    # SIGTERM/SIGHUP (a CI cancel, `kill`, a closed terminal) must unwind like Ctrl-C, so every
    # sandbox, container and temp dir is removed; the sandbox module's own handler is only
    # installed from the main thread, which prove's worker threads never are.
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, _exit_on_signal)
    from endstate_author.interrupts import on_sigint

    signal.signal(signal.SIGINT, on_sigint)  # recorded too, so a swallowed Ctrl-C still stops
    try:
        app(standalone_mode=True)
    except KeyboardInterrupt:
        typer.echo("endstate-author: interrupted", err=True)
        sys.exit(130)
    except SystemExit:
        raise
    except Exception as exc:
        typer.echo(f"endstate-author: internal error: {type(exc).__name__}: {exc}", err=True)
        typer.echo("please report it with the input that caused it", err=True)
        sys.exit(2)
