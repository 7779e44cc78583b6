"""Git-hook entry point: from the files a commit changes to the tasks they belong to."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from endstate_author.changed import tasks_for_files
from endstate_author.cli.cmd_lint import lint
from endstate_author.cli.output import OutputFormat
from endstate_author.cli.sandboxes import DEFAULT_KIND, SandboxOption


class HookAction(StrEnum):
    lint = "lint"
    prove = "prove"


def hook_command(
    action: Annotated[
        HookAction, typer.Argument(help="lint (fast, static) or prove (runs the graders).")
    ],
    files: Annotated[
        list[Path] | None,
        typer.Argument(help="Changed files, as pre-commit passes them; mapped to their tasks."),
    ] = None,
    strict: Annotated[
        bool, typer.Option("--strict", help="lint: warnings count as errors.")
    ] = False,
    sandbox: SandboxOption = DEFAULT_KIND,
) -> None:
    """Lint or prove exactly the tasks the given files belong to (for git hooks)."""
    tasks = tasks_for_files(files or [])
    if not tasks:
        return
    shown = ", ".join(t.as_posix() for t in tasks)
    typer.echo(f"endstate-author {action.value}: {len(tasks)} task(s): {shown}", err=True)
    if action is HookAction.lint:
        lint(
            paths=tasks,
            output_format=OutputFormat.text,
            strict=strict,
            fix=False,
            diff=False,
            config=None,
            isolated=False,
            select=None,
            ignore=None,
            exit_zero=False,
        )
        return
    # deferred: a lint hook must not import prove (it is slower to import and never needed)
    from endstate_author.cli.cmd_prove import prove_tasks_command

    prove_tasks_command(
        paths=tasks,
        sandbox=sandbox,
        image=None,
        jobs=None,
        only=None,
        no_cache=False,
        repeat=1,
        output_format=OutputFormat.text,
    )


def main() -> None:
    """``python -m endstate_author.hooks``: the hook without the rest of the CLI."""
    app = typer.Typer(add_completion=False, pretty_exceptions_enable=False, rich_markup_mode=None)
    app.command()(hook_command)
    try:
        app(prog_name="endstate-author-hook")
    except KeyboardInterrupt:
        typer.echo("endstate-author: interrupted", err=True)
        raise SystemExit(130) from None
    except SystemExit:
        raise
    except Exception as exc:  # the last line of defence: a message, never a traceback
        typer.echo(f"endstate-author: internal error: {type(exc).__name__}: {exc}", err=True)
        raise SystemExit(2) from None


if __name__ == "__main__":
    main()
