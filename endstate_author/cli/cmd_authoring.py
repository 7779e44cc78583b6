"""``rule``, ``schema`` and ``new``: what an author reads and starts from.

``rule CODE`` prints a rule's documentation, ``schema`` the JSON Schema of task.json, and
``new ID --category CAT`` scaffolds a task that lints clean (:mod:`endstate_author.scaffold`).
None of them runs suite code.
"""

from __future__ import annotations

import shutil
import sys
import textwrap
from pathlib import Path
from typing import Annotated

import typer

from endstate_author.cli.output import fail
from endstate_author.engine.suggest import did_you_mean
from endstate_author.rules.registry import RULES, all_rules
from endstate_author.scaffold import ScaffoldError, create_task


def rule(
    code: Annotated[
        str | None, typer.Argument(help="A code such as ES101, or a name such as unknown-key.")
    ] = None,
    all_: Annotated[bool, typer.Option("--all", help="List every rule.")] = False,
) -> None:
    """Print a rule's documentation (what it checks, why, an example, the fix)."""
    rules = all_rules()
    if all_ or code is None:
        width = max(80, shutil.get_terminal_size((80, 24)).columns)
        for r in rules:
            sev = "E" if r.severity == "error" else "W"
            head = f"{r.code}  {sev}  {r.name:<32} "
            # the summary wraps between words under itself: no line past the width, and
            # never a word (a path, a `code` span) split across two lines
            lines = textwrap.wrap(
                r.summary, width=width - len(head), break_long_words=False,
                break_on_hyphens=False,
            ) or [""]  # fmt: skip
            typer.echo(head + lines[0])
            for more in lines[1:]:
                typer.echo(" " * len(head) + more)
        return
    wanted = code.strip()
    by_name = {r.name: r for r in rules}
    found = RULES.get(wanted.upper()) or by_name.get(wanted.lower())
    if found is None:
        guess = did_you_mean(wanted.lower(), by_name) or did_you_mean(wanted.upper(), RULES)
        raise fail(f"no rule {code!r}{guess or ' (give a code such as ES101, or a rule name)'}")
    typer.echo(f"# {found.code} {found.name} ({found.severity})\n\n{found.doc}")


def schema() -> None:
    """Print the JSON Schema of task.json (the same file ships in the package)."""
    # deferred: the schema is built from the pydantic model, which lint never needs
    from endstate_author.schema import render_schema

    sys.stdout.write(render_schema())


def new(
    task_id: Annotated[str, typer.Argument(metavar="ID", help="The new task's id (kebab-case).")],
    category: Annotated[str, typer.Option("--category", "-c", help="The task's category.")],
    suite: Annotated[Path, typer.Option("--suite", help="Where to create it.")] = Path("tasks"),
) -> None:
    """Scaffold a task folder with the mandatory assertions in place."""
    try:
        written = create_task(task_id, category, suite)
    except ScaffoldError as exc:
        raise fail(str(exc)) from None
    except OSError as exc:
        raise fail(f"cannot write under {suite}: {exc.strerror or exc}") from None
    for path in written:
        typer.echo(f"created {path}")
    typer.echo(
        f"next: edit {suite / task_id / 'prompt.md'}, then `endstate-author lint "
        f"{suite / task_id}` and `endstate-author prove {suite / task_id}`"
    )
