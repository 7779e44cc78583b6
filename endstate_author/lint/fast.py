"""What ``lint`` prints and exits with, without typer: shared by the command and its fast path,
which answers a suite the cache holds whole before typer, the rules and the task model are
imported (~0.4 s); anything else falls through to the typer command, printing the same bytes.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from endstate_author.lint.cache import LintCache
from endstate_author.lint.run import CacheMiss, LintResult, lint_paths

Echo = Callable[[str, bool], None]
"""``echo(text, err)``: one line on stdout (or stderr), as ``typer.echo`` prints it."""

FORMATS = ("text", "json", "sarif", "github")

_ANSI = re.compile(r"\033\[[;?0-9]*[a-zA-Z]")  # what typer's echo strips outside a terminal


def report(
    result: LintResult, output_format: str, *, strict: bool, exit_zero: bool, echo: Echo
) -> int:
    """Print ``result`` as ``lint`` does and return its exit status (0 clean, 1 findings)."""
    # deferred: the renderers import rich for text output, which a usage error never needs
    from endstate_author.cli import formats

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


_FLAGS = {"--strict": "strict", "--exit-zero": "exit_zero", "--isolated": "isolated"}
_VALUES = {"-o": "format", "--output-format": "format", "--config": "config",
           "--select": "select", "--ignore": "ignore"}  # fmt: skip


def _parse(argv: Sequence[str]) -> dict[str, object] | None:
    """The options of a plain ``lint`` invocation; None for anything this path does not read."""
    if not argv or argv[0] != "lint":
        return None
    opts: dict[str, object] = {"paths": [], "format": "text", "strict": False,
                               "exit_zero": False, "isolated": False, "config": None,
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
            return None  # --help, --fix, --no-cache, "--", a typo: typer's to handle
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


def main(argv: Sequence[str]) -> int | None:
    """The exit status of ``lint`` answered wholly from the cache, or None to run it normally."""
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
            cache=LintCache.default(),
            cached_only=True,
        )
    except CacheMiss:
        return None  # something to lint: the ordinary command lints it (and caches it)
    except Exception:
        return None  # a usage error or anything unforeseen: the ordinary command says it
    if not result.tasks:
        return None
    return report(
        result,
        str(opts["format"]),
        strict=bool(opts["strict"]),
        exit_zero=bool(opts["exit_zero"]),
        echo=_echo,
    )
