"""Git-hook entry point: from the files a commit changes to the tasks they belong to."""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from endstate_author.cli.cmd_lint import lint
from endstate_author.cli.output import OutputFormat
from endstate_author.cli.sandboxes import DEFAULT_KIND, SandboxOption
from endstate_harness.task import (
    DEFECTS_DIR,
    FIXTURE_DIR,
    HOLDOUT_DIR,
    ORACLE_FILE,
    PROMPT_FILE,
    SOLUTION_DIR,
    TASK_FILE,
)

TASK_FILES = frozenset({TASK_FILE, PROMPT_FILE, ORACLE_FILE})
"""Files directly in a task folder that are part of the task."""

TASK_DIRS = frozenset({FIXTURE_DIR, HOLDOUT_DIR, SOLUTION_DIR, DEFECTS_DIR})
"""Folders of a task whose every file is part of the task."""


def task_of(file: Path) -> Path | None:
    """The task folder ``file`` is part of, or None when it belongs to no task.

    A file belongs to a folder holding task.json when its path below that folder is one of
    the task's own files (task.json, prompt.md, oracle.json) or lies under fixture/,
    holdout/, solution/ or defects/. When several folders qualify, the outermost wins: a
    task.json inside another task's fixture/ is that task's data (discovery never descends
    into fixture/ either), not a task of its own. Other files beside task.json (notes, a
    README) are not read by any run, so changing them re-checks nothing.
    """
    if file.is_dir():
        return file if (file / TASK_FILE).is_file() else None
    parts = file.parts
    found: Path | None = None
    for cut in range(len(parts) - 1, -1, -1):
        rest = parts[cut:]
        owned = (len(rest) == 1 and rest[0] in TASK_FILES) or (
            len(rest) >= 2 and rest[0] in TASK_DIRS
        )
        if not owned:
            continue
        folder = Path(*parts[:cut]) if cut else Path(".")
        if (folder / TASK_FILE).is_file():
            found = folder
    return found


def tasks_for_files(files: Iterable[Path]) -> list[Path]:
    """The task folders that ``files`` belong to: each once, in a stable (sorted) order.

    Paths keep the form they were given in (pre-commit gives paths relative to the
    repository root), so findings print the same paths the user sees in ``git status``.
    A file that belongs to no task is ignored; a deleted file still maps to its task as long
    as the task's task.json exists.
    """
    seen: dict[Path, Path] = {}
    for file in files:
        task = task_of(Path(file))
        if task is not None:
            seen.setdefault(task.resolve(), task)
    return sorted(seen.values(), key=lambda p: p.as_posix())


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
