"""``eval compare RUN_A RUN_B``: two saved eval runs side by side (console, and HTML)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from endstate_author.cli.output import fail
from endstate_author.engine.textsafe import markup, one_line
from endstate_author.evalreport.compare import (
    Comparison,
    NothingToCompare,
    compare,
    describe_difference,
    sandbox_line,
)
from endstate_author.evalreport.html import render_compare, write
from endstate_author.evalreport.run import RunError, load_run


def _fmt(value: object, metric: str = "") -> str:
    if value is None:
        return "unknown"
    if isinstance(value, float):
        return f"{value:+,.4f}" if metric.startswith("cost") else f"{value:+,.1f}"
    if isinstance(value, int):
        return f"{value:+,}"
    return str(value)


def print_comparison(c: Comparison, console: Console) -> None:
    (pa, na), (pb, nb) = c.counts["A"], c.counts["B"]
    # task ids and labels come from the results files: shown, never read as markup (textsafe)
    console.print(Text(f"A: {one_line(c.a.label)}\nB: {one_line(c.b.label)}"))
    console.print(f"tasks passed: A {pa}/{na}, B {pb}/{nb}")
    console.print(f"pass rate, B - A: {describe_difference(c)}")
    console.print(Text(one_line(sandbox_line(c))))
    flips = Table(title="Tasks that flipped", title_justify="left", show_edge=False)
    for name in ("task", "A", "B", "task content"):
        flips.add_column(name, no_wrap=True)
    for task, a, b in c.flipped:
        flips.add_row(Text(one_line(task)), a, b, c.content.get(task, "unknown"))
    if c.flipped:
        console.print(flips)
    else:
        console.print("no task flipped")
    deltas = Table(title="Cost and tokens", title_justify="left", show_edge=False)
    for name in ("metric", "A", "B", "B - A"):
        deltas.add_column(name, no_wrap=True, justify="left" if name == "metric" else "right")
    for metric, (a, b, d) in c.deltas.items():
        deltas.add_row(
            metric,
            _fmt(a, metric).lstrip("+"),
            _fmt(b, metric).lstrip("+"),
            _fmt(d, metric),
        )
    console.print(deltas)
    console.print(content_line(c))
    if c.only_a or c.only_b:
        console.print(
            markup(f"only in A: {', '.join(c.only_a) or 'none'}; only in B: "
                   f"{', '.join(c.only_b) or 'none'} (left out of the pass rates)")
        )


def content_line(c: Comparison) -> str:
    """Whether the shared tasks are the same tasks in both runs."""
    changed, unknown = c.tasks_with("changed"), c.tasks_with("unknown")
    line = f"task content: {len(c.tasks_with('same'))} of {len(c.common)} shared task(s) the same"
    if changed:
        line += (
            f"; CHANGED between the runs: {', '.join(changed)} (a difference there may be "
            "the task's, not the model's)"
        )
    if unknown:
        line += (
            f"; unknown for {len(unknown)} (a run recorded no task hash: made before they "
            "were kept)"
        )
    return line


def compare_command(
    run_a: Annotated[Path, typer.Argument(metavar="RUN_A", help="An `eval --out` folder.")],
    run_b: Annotated[Path, typer.Argument(metavar="RUN_B", help="Another one.")],
    html: Annotated[
        Path | None, typer.Option("--html", help="Also write the comparison as this HTML file.")
    ] = None,
) -> None:
    """Compare two eval runs: tasks that flipped, pass-rate difference with a 95% confidence
    interval, cost and token deltas."""
    try:
        a, b = load_run(run_a), load_run(run_b)
        result = compare(a, b)
    except (RunError, NothingToCompare) as exc:
        raise fail(str(exc)) from None
    print_comparison(result, Console(highlight=False, soft_wrap=True))
    if html is not None:
        try:
            path = write(html, render_compare(result))
        except OSError as exc:
            raise fail(f"cannot write {html}: {exc.strerror or exc}") from None
        typer.echo(f"wrote {path}", err=True)


app = typer.Typer(add_completion=False, no_args_is_help=True, help="Compare eval runs.")
app.command("compare")(compare_command)
