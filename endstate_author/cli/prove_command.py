"""``endstate-author prove`` without typer: its run, and a reader of the command lines it is
sure of (the report it prints is :mod:`endstate_author.cli.prove_report`'s).

Why: typer 0.29 costs prove's start ~60 ms to import and, once invoked, imports pydantic and
builds a ``TypeAdapter`` per parameter; ``prove --only visible TASK`` is one grading, about one
bare run of the task's tests, and its start was most of it (issue 48: 5.5x the bare run,
~250 ms of imports). ``cli/cmd_prove.py`` stays the one definition of prove's interface (its
help, its usage errors, the hook's call): it calls :func:`run`. :func:`parse` reads only what
it is sure of (a test holds it to the typer command's options and to what typer hands
:func:`run`) and leaves the rest (``--help``, a typo, a value out of range) to typer. Nothing
here may import typer, and rich only where it draws (the text report, a terminal's live
progress).
"""

from __future__ import annotations

import errno
import os
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

import endstate_author.cli.progress as progress
import endstate_author.cli.prove_report as prove_report
import endstate_author.interrupts as interrupts
from endstate_author.cli.output import OutputFormat, echo
from endstate_author.cli.prove_report import exit_code, print_report
from endstate_author.cli.sandboxes import DEFAULT_KIND, choose
from endstate_author.engine.textsafe import one_line
from endstate_author.executors import ExecutorChoice, ExecutorError, choose_executor, load_ray
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
from endstate_harness.sandbox.choice import SandboxKind


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
    if output_format is OutputFormat.text:
        prove_report.preload()
    try:
        with shown:
            proofs = _prove(prove, choice, targets, options, shown.task_done)
        if mutation_report is not None:
            _write_mutation_report(proofs, mutation_report)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 2
    print_report(proofs, spec, output_format)
    return exit_code(proofs)


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
    interrupts.install()
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
