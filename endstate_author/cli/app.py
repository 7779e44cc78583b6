"""The ``endstate-author`` typer app: which commands exist, and ``main``."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

import endstate_author.interrupts as interrupts
from endstate_author import __version__

app = typer.Typer(
    name="endstate-author",
    help="Lint, prove and edit endstate evaluation tasks. No silent task.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


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


COMMANDS = frozenset({
    "lint", "rule", "schema", "new", "lsp", "vendor", "editor", "eval", "run", "sessions",
    "prove", "redteam", "hook", "sandbox",
})
"""Every command's name: an invocation that names none of them (a typo, ``--help``) gets
them all registered, so that its help and its did-you-mean list every one."""


def _wanted(*names: str) -> bool:
    """Whether this invocation may need these commands: a command's module is imported only
    when it may be called (the agent loop costs ~0.4 s, which ``lint`` and ``prove`` should
    not pay; ``prove`` should not pay for the scaffolder or the fixer either)."""
    args = [a for a in sys.argv[1:] if not a.startswith("-")]
    return not args or args[0] in names or args[0] not in COMMANDS


def _register_optional() -> None:
    """Every command, registered only when it may be called (:func:`_wanted`); each import
    is deferred for that reason."""
    if _wanted("lint"):
        from endstate_author.cli.cmd_lint import lint  # deferred: see _wanted

        app.command("lint")(lint)
    if _wanted("rule", "schema", "new"):
        from endstate_author.cli.cmd_authoring import new, rule, schema  # deferred: as above

        app.command("rule")(rule)
        app.command("schema")(schema)
        app.command("new")(new)
    if _wanted("lsp"):
        from endstate_author.cli.cmd_lsp import lsp  # deferred: as above

        app.command("lsp")(lsp)
    if _wanted("vendor"):
        from endstate_author.cli.cmd_vendor import vendor  # deferred: as above

        app.command("vendor")(vendor)
    if _wanted("editor"):
        import endstate_author.cli.cmd_editor as cmd_editor  # deferred: as above

        app.add_typer(cmd_editor.app, name="editor")
    words = [a for a in sys.argv[1:] if not a.startswith("-")]
    if words[:2] == ["eval", "compare"]:
        # `eval SUITE` takes a folder as its first argument, so `eval compare RUN_A RUN_B`
        # exists only when it is asked for; deferred: only this invocation needs it
        import endstate_author.cli.cmd_compare as cmd_compare

        app.add_typer(cmd_compare.app, name="eval")
    elif _wanted("eval", "run", "sessions"):
        # deferred: imports the agent loop, which only these three commands need
        import endstate_author.cli.cmd_eval as cmd_eval

        app.command("eval")(cmd_eval.eval_command)
        app.command("run")(cmd_eval.run_command)
        app.command("sessions")(cmd_eval.sessions_command)
    if _wanted("prove"):
        # deferred: imports prove, which lint must never pay for
        import endstate_author.cli.cmd_prove as cmd_prove

        app.command("prove")(cmd_prove.prove_tasks_command)
    if _wanted("redteam"):
        # deferred: imports the agent loop and prove, which only ``redteam`` needs
        import endstate_author.cli.cmd_redteam as cmd_redteam

        app.command("redteam")(cmd_redteam.redteam_command)
    if _wanted("hook"):
        # deferred: only ``hook`` needs it (and it imports prove when it proves)
        import endstate_author.cli.cmd_hook as cmd_hook

        app.command("hook")(cmd_hook.hook_command)
    if _wanted("sandbox"):
        # deferred: imports the Docker client, which only ``sandbox`` needs up front
        import endstate_author.cli.cmd_sandbox as cmd_sandbox

        app.add_typer(cmd_sandbox.app, name="sandbox")


_register_optional()


def main() -> None:
    """Entry point: typer's exit codes, and no traceback for anything that escapes."""
    # SIGTERM/SIGHUP (a CI cancel, `kill`, a closed terminal) must unwind like Ctrl-C, so every
    # sandbox, container and temp dir is removed; the sandbox module's own handler is only
    # installed from the main thread, which prove's worker threads never are.
    interrupts.install()
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
