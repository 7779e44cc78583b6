"""``lint`` without typer: what it prints and exits with, and the path that runs it.

Why a second reader of ``lint``'s arguments: typer 0.29 imports pydantic and builds a
``TypeAdapter`` per parameter, so parsing through it costs more than linting one task
(measured, fresh processes: bare interpreter 12 ms; one task through typer 256 ms, through
this path 115-134 ms). Anything it does not read (``--help``, ``--fix``, ``--diff``, usage
errors) falls through to the typer command, the one definition of ``lint``'s interface (a
test holds this reader to its options); both print through :func:`report`, the same bytes.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from endstate_author.changed import tasks_for_files
from endstate_author.lint.cache import LintCache
from endstate_author.lint.run import LintResult, lint_paths

Echo = Callable[[str, bool], None]
"""``echo(text, err)``: one line on stdout (or stderr), as ``typer.echo`` prints it."""

FORMATS = ("text", "json", "sarif", "github")

_ANSI = re.compile(r"\033\[[;?0-9]*[a-zA-Z]")  # what typer's echo strips outside a terminal


def report(
    result: LintResult, output_format: str, *, strict: bool, exit_zero: bool, echo: Echo
) -> int:
    """Print ``result`` as ``lint`` does and return its exit status (0 clean, 1 findings)."""
    # deferred: the renderers import rich for text output, which a usage error never needs
    import endstate_author.lint.formats as formats

    counted = result.errors + (result.warnings if strict else 0)
    summary = _summary(result.tasks, result.errors, result.warnings)
    if result.diagnostics or output_format != "text":
        if output_format == "json":
            echo(formats.render_json(result.diagnostics), False)
        elif output_format == "sarif":
            echo(formats.render_sarif(result.diagnostics), False)
        elif output_format == "github":
            text = formats.render_github(result.diagnostics)
            if text:
                echo(text, False)
        else:
            formats.render_text(result.diagnostics, sys.stdout, summary=summary)
    elif result.tasks:
        # a clean run prints nothing on stdout (scripts and hooks read stdout); say it on stderr
        echo(f"All clear: {result.tasks} task(s) checked, no findings.", True)
    return 1 if counted and not exit_zero else 0


def _summary(tasks: int, errors: int, warnings: int) -> str:
    noun = "task" if tasks == 1 else "tasks"
    if not errors and not warnings:
        return f"[green]All clear:[/] {tasks} {noun} checked, no findings."
    return f"Found {errors} error(s) and {warnings} warning(s) in {tasks} {noun}."


def _echo(text: str, err: bool) -> None:
    stream = sys.stderr if err else sys.stdout
    if not stream.isatty():
        text = _ANSI.sub("", text)
    stream.write(text + "\n")
    stream.flush()


_FLAGS = {"--strict": "strict", "--exit-zero": "exit_zero", "--isolated": "isolated",
          "--no-cache": "no_cache"}  # fmt: skip
_VALUES = {"-o": "format", "--output-format": "format", "--config": "config",
           "--select": "select", "--ignore": "ignore"}  # fmt: skip


def _parse(argv: Sequence[str]) -> dict[str, object] | None:
    """The options of a plain ``lint`` invocation; None for anything this path does not read."""
    if not argv or argv[0] != "lint":
        return None
    opts: dict[str, object] = {"paths": [], "format": "text", "strict": False,
                               "exit_zero": False, "isolated": False, "config": None,
                               "no_cache": False,
                               "select": [], "ignore": []}  # fmt: skip
    args = list(argv[1:])
    while args:
        arg = args.pop(0)
        name, eq, value = arg.partition("=")
        if arg in _FLAGS:
            opts[_FLAGS[arg]] = True
        elif name in _VALUES and name.startswith("--") and eq:
            opts_value(opts, _VALUES[name], value)
        elif arg in _VALUES and args:
            opts_value(opts, _VALUES[arg], args.pop(0))
        elif arg.startswith("-") or not arg:
            return None  # --help, --fix, --diff, "--", a typo: typer's to handle
        else:
            opts["paths"].append(Path(arg))  # type: ignore[attr-defined]
    if opts["format"] not in FORMATS:
        return None
    return opts


def opts_value(opts: dict[str, object], key: str, value: str) -> None:
    if key in ("select", "ignore"):
        opts[key].extend(s for s in value.split(",") if s)  # type: ignore[attr-defined]
    elif key == "config":
        opts[key] = Path(value)
    else:
        opts[key] = value


def hook_main(argv: Sequence[str]) -> int | None:
    """``hook lint FILES... [--strict]``: the tasks the files belong to, linted as
    :func:`main` does (None: run the typer command instead)."""
    files = [a for a in argv[1:] if a != "--strict"]
    if not argv or argv[0] != "lint" or any(a.startswith("-") or not a for a in files):
        return None
    tasks = tasks_for_files(Path(f) for f in files)
    if not tasks:
        return 0
    shown = ", ".join(t.as_posix() for t in tasks)
    header = f"endstate-author lint: {len(tasks)} task(s): {shown}"
    strict = ["--strict"] if "--strict" in argv[1:] else []
    return main(["lint", *(str(t) for t in tasks), *strict], header=header)


def main(argv: Sequence[str], *, header: str | None = None) -> int | None:
    """The exit status of ``lint``, or None to run it through typer (see the module doc);
    ``header`` is printed on stderr before the findings."""
    opts = _parse(argv)
    if opts is None or (sys.stdout.encoding or "").lower().replace("-", "") != "utf8":
        return None
    try:
        result = lint_paths(
            opts["paths"] or [Path(".")],  # type: ignore[arg-type]
            config_file=opts["config"],  # type: ignore[arg-type]
            isolated=bool(opts["isolated"]),
            select=opts["select"],  # type: ignore[arg-type]
            ignore=opts["ignore"],  # type: ignore[arg-type]
            cache=None if opts["no_cache"] else LintCache.default(),
        )
    except Exception:
        return None  # a usage error or anything unforeseen: the ordinary command says it
    if not result.tasks:
        return None
    if header is not None:
        _echo(header, True)
    return report(
        result,
        str(opts["format"]),
        strict=bool(opts["strict"]),
        exit_zero=bool(opts["exit_zero"]),
        echo=_echo,
    )
