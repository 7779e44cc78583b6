"""``endstate-author prove`` without typer: its run and its report, and a reader of the
command lines it is sure of.

Why: typer 0.29 costs prove's start ~60 ms to import and, once invoked, imports pydantic and
builds a ``TypeAdapter`` per parameter; ``prove --only visible TASK`` is one grading, about one
bare run of the task's tests, and its start was most of it (issue 48: 5.5x the bare run,
~250 ms of imports). ``cli/cmd_prove.py`` stays the one definition of prove's interface (its
help, its usage errors, the hook's call): it calls :func:`run`. :func:`parse` reads only what
it is sure of (a test holds it to the typer command's options) and leaves the rest (``--help``,
a typo, a value out of range) to typer, so both paths print the same bytes. Nothing here may
import typer, and rich only where it draws (the text report, a terminal's live progress).
"""

from __future__ import annotations

import errno
import json
import os
import re
import signal
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from endstate_author.cli import formats, progress
from endstate_author.cli.output import OutputFormat, echo, emit
from endstate_author.cli.sandboxes import DEFAULT_KIND, choose
from endstate_author.executors import ExecutorChoice, ExecutorError, choose_executor, load_ray
from endstate_author.interrupts import on_sigint
from endstate_author.lint.run import UsageError, resolve_targets
from endstate_author.prove import (
    CHECK_GROUPS,
    DEFAULT_MUTANT_BUDGET,
    DEFAULT_MUTANTS,
    ProveOptions,
    TaskProof,
    default_jobs,
    prove_paths,
)
from endstate_author.prove.model import DEFAULT_COUNTEREXAMPLE_BUDGET
from endstate_author.textsafe import markup as escape  # shown, never obeyed
from endstate_author.textsafe import one_line
from endstate_harness.sandbox.choice import SandboxChoice, SandboxKind

if TYPE_CHECKING:
    from rich.console import Console

_MARK = {
    "pass": "[green]pass[/]",
    "fail": "[bold red]FAIL[/]",
    "unassessed": "[yellow]unassessed[/]",
    "skipped": "[dim]skipped[/]",
}


def _rows(proof: TaskProof) -> Iterator[tuple[str, str, float, str, str]]:
    """Table rows: every check, except that a group of more than three checks that all
    passed (the probes, typically), or were all skipped for one reason (the mutants of a
    solution that fails), is one row saying so, and the mutants a time budget left unrun are
    one row naming them."""
    groups: dict[str, list] = {}  # type: ignore[type-arg]
    for check in proof.checks:
        groups.setdefault(check.group, []).append(check)
    for checks in groups.values():
        unrun = [c for c in checks if c.unrun]
        checks = [c for c in checks if not c.unrun]
        seconds = sum(c.seconds for c in checks)
        if len(checks) > 3 and all(c.outcome == "pass" for c in checks):
            walls = "none" if any(c.walls == "none" for c in checks) else ""
            yield f"{checks[0].group}: all {len(checks)} passed", "pass", seconds, "", walls
        elif len(checks) > 3 and len({(c.outcome, c.detail) for c in checks}) == 1 and (
            checks[0].outcome == "skipped"
        ):
            yield (f"{checks[0].group}: {len(checks)} skipped", "skipped", seconds,
                   checks[0].detail, "")  # fmt: skip
        else:
            for c in checks:
                yield (c.check, c.outcome, c.seconds, c.detail if c.outcome != "pass" else "",
                       c.walls)
        if unrun:
            ids = ", ".join(c.check.split()[1] for c in unrun)
            yield (f"{len(unrun)} mutant(s) not run", "skipped", 0.0,
                   f"{unrun[0].detail.removeprefix('not run: ')}: {ids}", "")  # fmt: skip


def _print_table(proofs: Sequence[TaskProof], console: Console) -> None:
    # deferred: rich's table (~15 ms), drawn only for the text output, at the end
    from rich.table import Table

    for proof in proofs:
        table = Table(
            title=f"{proof.task_id}" + (" (cached)" if proof.cached else ""),
            title_justify="left",
            show_edge=False,
            pad_edge=False,
        )
        table.add_column("check")
        table.add_column("outcome")
        table.add_column("time", justify="right")
        table.add_column("detail", overflow="fold")
        for name, outcome, seconds, detail, walls in _rows(proof):
            mark = _MARK[outcome] + (" (no walls)" if walls == "none" else "")
            table.add_row(escape(name), mark, f"{seconds:.2f}s", escape(detail))
        console.print(table)
        if proof.mutation is not None:
            console.print(escape(f"{proof.task_id}: {mutation_text(proof.mutation)}"))
        console.print()


def mutation_text(score: dict[str, Any]) -> str:
    """The mutation score line of one task (text and github outputs): the task's score only
    when every mutant ran, else plainly a sample's."""
    extra = []
    if score.get("survived"):
        extra.append(f"{score['survived']} survived")
    if score.get("unassessed"):
        extra.append(f"{score['unassessed']} unassessed")
    if score.get("equivalent"):
        extra.append(f"{score['equivalent']} marked equivalent")
    if score.get("sampled_out"):
        extra.append(f"{score['sampled_out']} sampled out (their line's first mutants killed)")
    tail = f" ({', '.join(extra)})" if extra else ""
    searched = score.get("counterexample_search")
    if searched:
        tail += (
            f"; counterexample search: {searched['counterexamples']} of "
            f"{searched['survivors']} survivors told from the solution (ES911), "
            f"{searched['probably_equivalent']} probably equivalent (ES916), "
            f"{searched['calls_tried']} calls, {searched['seconds']:.1f} s of "
            f"{searched['budget']:g} s (--counterexample-budget)"
        )
    if score.get("complete", not score.get("not_run")):
        return (
            f"mutation score {score['killed']}/{score['run']} killed{tail} "
            f"of {score['generated']} generated"
        )
    budget = score.get("over_budget") or 0
    why = []
    if budget:
        why.append(f"{budget} over the time budget (--mutant-budget)")
    if score["not_run"] - budget:
        why.append(f"{score['not_run'] - budget} over --mutants")
    return (
        f"mutation score unknown: only {score['run']} of {score['generated']} mutants ran "
        f"({score['not_run']} not run: {', '.join(why)}); of those run, {score['killed']} "
        f"killed{tail}"
    )


def _sarif(proofs: Sequence[TaskProof], spec: SandboxChoice) -> str:
    """SARIF with the sandbox and each task's mutation score in the run's property bag."""
    document = formats.to_sarif([d for p in proofs for d in p.diagnostics])
    properties: dict[str, Any] = {"sandbox": spec.describe()}
    scores = {p.task_id: p.mutation for p in proofs if p.mutation is not None}
    if scores:
        properties["mutationScores"] = scores
    walls = {p.task_id: p.walls for p in proofs if p.walls}
    if walls:
        properties["walls"] = walls  # "none": graded without walls
    unwalled = {str(p.path) for p in proofs if p.walls == "none"}
    for result in document["runs"][0]["results"]:
        places = result.get("locations") or [{}]
        uri = str(places[0].get("physicalLocation", {}).get("artifactLocation", {}).get("uri"))
        if unwalled and result.get("ruleId", "").startswith("ES9") and any(
                root in uri or Path(root).as_uri() in uri for root in unwalled):
            result.setdefault("properties", {})["walls"] = "none"
    document["runs"][0]["properties"] = properties
    return formats.dumps(document)


def _write_mutation_report(proofs: Sequence[TaskProof], folder: Path) -> None:
    """``--mutation-report DIR``: the report's JSON and HTML view, said on stderr (stdout
    stays the chosen output's)."""
    # deferred: the report's module (task loading, mutant generation) only when asked for
    from endstate_author.prove import mutation_report

    try:
        written, page = mutation_report.write(proofs, folder)
    except OSError as exc:
        echo(f"endstate-author: cannot write the mutation report to {folder}: {exc}", err=True)
        raise SystemExit(2) from None
    echo(one_line(f"mutation report: {written}"), err=True)
    if page is None:
        echo(
            "endstate-author: no HTML view: this install does not carry the "
            "mutation-testing-elements component (a wheel does; in a checkout, run "
            "`make web-assets`)", err=True)
    else:
        echo(one_line(f"mutation report view: {page}"), err=True)


def _print_progress(task_id: str, check: str) -> None:
    print(one_line(f"checking: {task_id}: {check}"), file=sys.stderr, flush=True)


def summary_line(proofs: Sequence[TaskProof]) -> str:
    """One line counting every outcome; never "0 task(s) with findings" while checks could
    not run, since those tasks are not proved clean."""
    checks = [c for p in proofs for c in p.checks]
    count = {
        o: sum(c.outcome == o for c in checks) for o in ("pass", "fail", "unassessed", "skipped")
    }
    tasks_bad = sum(any(c.outcome == "fail" for c in p.checks) or _static_error(p)
                    for p in proofs)
    line = (
        f"{len(proofs)} task(s): {count['pass']} checks passed, {count['fail']} failed, "
        f"{count['unassessed']} unassessed, {count['skipped']} skipped"
    )
    if tasks_bad:
        line += f"; {tasks_bad} task(s) with findings"
    if count["unassessed"]:
        unproved = sum(p.unassessed for p in proofs)
        line += (
            f"; {count['unassessed']} check(s) could not run (ES908), so {unproved} task(s) "
            "are not proved"
        )
    elif not tasks_bad:
        line += "; no findings"
    return line


def _static_error(proof: TaskProof) -> bool:
    """Whether the proof carries a static error beside its checks (ES414: an entry of the
    task's trees no sandbox can use)."""
    return any(d.severity == "error" and d.code < "ES9" for d in proof.diagnostics)


def exit_code(proofs: Sequence[TaskProof]) -> int:
    """1 when any check failed with an error (findings, even beside unassessed checks) or a
    static error stands beside the checks, else 2 when any could not run, else 0. A warning
    (ES912 without ``--strict``, ES311) exits 0."""
    if any(c.outcome == "fail" and c.severity == "error" for p in proofs for c in p.checks):
        return 1
    if any(_static_error(p) for p in proofs):
        return 1
    return 2 if any(p.unassessed for p in proofs) else 0


def _prove(
    remote: Callable[..., list[TaskProof]] | None,
    choice: ExecutorChoice,
    targets: Sequence[tuple[Path, Path | None]],
    options: ProveOptions,
    on_task: Callable[[TaskProof], None] | None,
) -> list[TaskProof]:
    """On this machine, or on the Ray cluster ``choice`` names."""
    paths = [t for t, _ in targets]
    if remote is None:
        return prove_paths(paths, options, on_task=on_task)
    try:
        return remote(paths, options, choice, on_task=on_task)
    except ExecutorError as exc:
        echo(f"endstate-author: {exc}", err=True)
        raise SystemExit(2) from None


def run(
    paths: Sequence[Path],
    *,
    sandbox: SandboxKind | str = DEFAULT_KIND,
    image: str | None = None,
    jobs: int | None = None,
    only: Sequence[str] = (),
    no_cache: bool = False,
    repeat: int = 1,
    mutants: int | None = DEFAULT_MUTANTS,
    mutant_budget: float = DEFAULT_MUTANT_BUDGET,
    counterexample_budget: float = DEFAULT_COUNTEREXAMPLE_BUDGET,
    strict: bool = False,
    output_format: OutputFormat = OutputFormat.text,
    quiet: bool = False,
    progress_lines: bool = False,
    progress_json: bool = False,
    mutation_report: Path | None = None,
    executor: str = "local",
    address: str | None = None,
) -> int:
    """Prove ``paths`` and print the report; the exit status (a usage error: 2, said on
    stderr). The options are ``prove``'s, as ``cli/cmd_prove.py`` declares them."""
    try:
        targets = resolve_targets(list(paths))
    except UsageError as exc:
        echo(f"endstate-author: {exc}", err=True)
        return 2
    if not targets:
        echo("endstate-author: no task.json found under " + ", ".join(map(str, paths)), err=True)
        return 2
    if mutation_report is not None and mutation_report.exists() and not mutation_report.is_dir():
        # said before the proof, not after minutes of it
        echo(f"endstate-author: --mutation-report {mutation_report}: not a folder", err=True)
        return 2
    try:
        choice = choose_executor(executor, address)
        prove = load_ray(choice).prove_paths if choice.remote else None
    except ExecutorError as exc:
        echo(f"endstate-author: {exc}", err=True)
        return 2
    # one message before any task starts, not one per check
    spec = choose(SandboxKind(sandbox), image).for_grading()
    # an editor asking for 'checking:' lines or JSON events reads them itself; no second kind
    # of progress
    shown: progress.LineProgress | progress.LiveProgress | progress.JsonProgress
    if progress_json:
        shown = progress.JsonProgress()
        shown.sandbox(spec)
    else:
        shown = progress.choose(targets, _stderr_console(), quiet=quiet or progress_lines)
    options = ProveOptions(
        sandbox=spec,
        jobs=jobs or default_jobs(),
        only=tuple(only),
        use_cache=not no_cache,
        repeat=repeat,
        on_check=_print_progress if progress_lines else shown.check_started,
        on_check_done=None if progress_lines and not progress_json else shown.check_done,
        mutants=mutants,
        mutant_budget=mutant_budget,
        counterexample_budget=counterexample_budget,
        strict=strict,
    )
    try:
        with shown:
            proofs = _prove(prove, choice, targets, options, shown.task_done)
        if mutation_report is not None:
            _write_mutation_report(proofs, mutation_report)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 2
    _report(proofs, spec, output_format)
    return exit_code(proofs)


def _report(proofs: Sequence[TaskProof], spec: SandboxChoice, output_format: OutputFormat) -> None:
    diagnostics = [d for p in proofs for d in p.diagnostics]
    if output_format is OutputFormat.json:
        echo(
            json.dumps(
                {
                    "sandbox": spec.describe(),  # where every check ran, and why
                    "diagnostics": [d.to_json() for d in diagnostics],
                    "tasks": [p.to_json() for p in proofs],
                },
                indent=2,
            )
        )
    elif output_format is OutputFormat.text:
        # deferred: rich (~50 ms), for the text report only, drawn once the checks are done
        from rich.console import Console

        out = Console(file=sys.stdout, highlight=False, soft_wrap=True)
        if not out.is_terminal:
            # in a pipe, a file or a CI log a table is as wide as its widest row: wrapped at
            # 80 columns, an identifier was cut in the middle (HoldoutLRUCacheTest.test_capac
            # / ity_must_be_positive), which no reader can search for
            out = Console(file=sys.stdout, highlight=False, soft_wrap=True, width=10_000,
                          no_color=True)
        _print_table(proofs, out)
        emit(diagnostics, output_format, summary_line(proofs))
    elif output_format is OutputFormat.sarif:
        echo(_sarif(proofs, spec))
    else:
        emit(diagnostics, output_format, None)
        for proof in proofs:
            if proof.mutation is not None:
                echo(
                    f"::notice title=mutation score {proof.task_id}::"
                    f"{mutation_text(proof.mutation)}"
                )


def _stderr_console() -> Any:
    """rich's console on stderr when stderr may be a terminal (where the live progress is
    drawn), else a stand-in that says it is not one: rich's own answer in both cases (it
    looks at ``TTY_COMPATIBLE``, ``FORCE_COLOR`` and then ``isatty``), without importing rich
    for the line progress of a pipe, a CI log or an editor."""
    stream = sys.stderr
    if os.environ.get("TTY_COMPATIBLE") or os.environ.get("FORCE_COLOR") is not None or (
        hasattr(stream, "isatty") and stream.isatty()
    ):
        # deferred: rich, only where its live progress may be drawn
        from rich.console import Console

        return Console(stderr=True)
    return _NoTerminal()


class _NoTerminal:
    is_terminal = False


_FLAGS = {"--no-cache": "no_cache", "--strict": "strict", "--quiet": "quiet", "-q": "quiet",
          "--progress-lines": "progress_lines", "--progress-json": "progress_json"}  # fmt: skip
_VALUES = {"--sandbox": "sandbox", "--image": "image", "--jobs": "jobs", "-j": "jobs",
           "--only": "only", "--repeat": "repeat", "--mutants": "mutants",
           "--mutant-budget": "mutant_budget", "--counterexample-budget": "counterexample_budget",
           "--output-format": "output_format", "-o": "output_format",
           "--mutation-report": "mutation_report", "--executor": "executor",
           "--address": "address"}  # fmt: skip
_COUNT = re.compile(r"[0-9]+")
_SECONDS = re.compile(r"[0-9]+(\.[0-9]*)?|\.[0-9]+")
_CHOICES: dict[str, tuple[str, ...]] = {
    "sandbox": ("auto", "docker", "local"),
    "output_format": tuple(f.value for f in OutputFormat),
    "executor": ("local", "ray"),
    "only": CHECK_GROUPS,
}
_LEAST = {"jobs": 1, "repeat": 1, "mutants": 0}


def _value(key: str, text: str) -> object | None:
    """The option's value as typer would hand it to the command; None for anything this
    reader is not sure typer would accept as that (typer then says what is wrong)."""
    if key in _CHOICES:
        return text if text in _CHOICES[key] else None
    if key in _LEAST:
        return int(text) if _COUNT.fullmatch(text) and int(text) >= _LEAST[key] else None
    if key in ("mutant_budget", "counterexample_budget"):
        return float(text) if _SECONDS.fullmatch(text) else None
    if key == "mutation_report":
        return Path(text) if text else None
    return text  # --image, --address: any text


def parse(argv: Sequence[str]) -> dict[str, Any] | None:
    """The options of a plain ``prove`` command line (``argv`` from the word ``prove``), as
    keyword arguments of :func:`run`; None for anything this reader does not take for sure:
    ``--help``, an unknown option, a value typer would refuse or convert otherwise, no path."""
    if not argv or argv[0] != "prove":
        return None
    opts: dict[str, Any] = {"paths": []}
    only: list[str] = []
    args = list(argv[1:])
    while args:
        arg = args.pop(0)
        name, eq, text = arg.partition("=")
        if arg in _FLAGS:
            opts[_FLAGS[arg]] = True
            continue
        if name.startswith("--") and eq and name in _VALUES:
            key = _VALUES[name]
        elif arg in _VALUES and args and not args[0].startswith("-"):
            key, text = _VALUES[arg], args.pop(0)
        elif arg.startswith("-") or not arg:
            return None  # --help, "--", a typo, a short option bundle: typer's to handle
        else:
            opts["paths"].append(Path(arg))
            continue
        value = _value(key, text)
        if value is None:
            return None
        if key == "only":
            only.append(str(value))
        else:
            opts[key] = value
    if not opts["paths"]:
        return None
    if only:
        opts["only"] = only
    if "output_format" in opts:
        opts["output_format"] = OutputFormat(opts["output_format"])
    return opts


def main(opts: dict[str, Any]) -> NoReturn:
    """Run ``prove`` with the options :func:`parse` read and exit as the typer app does
    (``cli/app.py``'s ``main`` around typer's own): SIGTERM and SIGHUP unwind like Ctrl-C, a
    Ctrl-C exits 130, a reader that went away exits 1, anything unforeseen is one line and
    exit 2, never a traceback."""
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, _exit_on_signal)
    signal.signal(signal.SIGINT, on_sigint)  # recorded too, so a swallowed Ctrl-C still stops
    try:
        status = run(**opts)
    except KeyboardInterrupt:
        raise SystemExit(130) from None
    except SystemExit:
        raise
    except OSError as exc:
        if exc.errno != errno.EPIPE:
            _internal(exc)
        sys.stdout = open(os.devnull, "w")  # the exit closes it; nothing more reaches the pipe
        raise SystemExit(1) from None
    except Exception as exc:
        _internal(exc)
    raise SystemExit(status)


def _internal(exc: BaseException) -> NoReturn:
    echo(f"endstate-author: internal error: {type(exc).__name__}: {exc}", err=True)
    echo("please report it with the input that caused it", err=True)
    raise SystemExit(2)


def _exit_on_signal(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)
