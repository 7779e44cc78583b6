"""``vendor``: make a suite that uses the hardened graders gradable by plain endstate 0.3.0.

Without ``--write`` it only shows what it would change (the task.json diff and a line about
the vendored module); it never modifies a file unless asked. See
:mod:`endstate_author.vendoring` for what is written and why.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from endstate_author.cli.output import fail


def vendor(
    suite: Annotated[Path, typer.Argument(metavar="SUITE", help="The suite folder.")],
    write: Annotated[
        bool, typer.Option("--write", help="Write the changes (default: show them).")
    ] = False,
) -> None:
    """Write tests_pass, judged_tests, delegates_to into SUITE/endstate_vendor/, point task.json
    at them, so that plain endstate 0.3.0 can grade the suite (PYTHONPATH=SUITE endstate eval
    ...)."""
    # deferred: the vendoring code imports the graders; lint, registered beside it, must not
    from endstate_author.vendoring.suite import (
        VendorError,
        module_summary,
        plan_vendor,
        render_diff,
        write_plan,
    )

    try:
        plan = plan_vendor(suite)
    except VendorError as exc:
        raise fail(str(exc)) from None
    except OSError as exc:
        raise fail(f"cannot read {suite}: {exc.strerror or exc}") from None
    for note in plan.notes:
        typer.echo(f"note: {note}", err=True)
    if not write:
        sys.stdout.write(render_diff(plan))
        typer.echo(module_summary(plan))
        if plan.empty:
            typer.echo("nothing to change")
        else:
            typer.echo(
                f"{len(plan.renames)} grader name(s) in {len(plan.manifests)} task.json to "
                "change; run again with --write to apply"
            )
        return
    try:
        written = write_plan(plan)
    except OSError as exc:
        raise fail(f"cannot write under {suite}: {exc.strerror or exc}") from None
    typer.echo(module_summary(plan) if plan.needs_module else "no vendored module needed")
    for path in written:
        typer.echo(f"wrote {path}")
    if plan.needs_module:
        typer.echo(
            f"grade it with plain endstate: PYTHONPATH={suite} endstate eval --suite {suite}"
        )
