"""The ``eval``, ``run`` and ``sessions`` commands.

``python -m endstate_author.cli_eval`` runs them standalone. Exit status as prove's: 0 every
run passed, 1 some failed, 2 any was unassessed (a harness error) or bad input.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from endstate_author.cli.sandboxes import DEFAULT_KIND, ImageOption, SandboxOption, choose
from endstate_author.engine.textsafe import markup, one_line, shown
from endstate_author.evalreport.console import print_report
from endstate_author.evalreport.html import render_report
from endstate_author.evalreport.html import write as write_html
from endstate_author.evalreport.results import (
    PriceError,
    RunFacts,
    load_prices,
    results_json,
    write_report,
)
from endstate_author.evalreport.run import Run
from endstate_author.executors import ExecutorError, choose_executor, load_ray
from endstate_author.lint.run import lint_paths
from endstate_author.taskhash import content_hash
from endstate_harness.agent.loop import DEFAULT_SYSTEM_PROMPT, AgentLoop, RunResult
from endstate_harness.agent.oracle import OracleError, load_oracle, solution_provider
from endstate_harness.agent.providers import (
    OpenAIProvider,
    Provider,
    ProviderError,
    ScriptedProvider,
)
from endstate_harness.agent.session import SessionError, SessionStore
from endstate_harness.agent.tools import DirectoryWorkspace
from endstate_harness.layout import CATEGORIES, find_task_dirs
from endstate_harness.runner import TaskResult, run_suite
from endstate_harness.task import Task, TaskError, discover_tasks, load_task

DEFAULT_STORE = Path.home() / ".endstate-author" / "sessions.sqlite3"
PROVIDERS = ("openai", "oracle", "scripted")

console = Console(highlight=False)
errors = Console(stderr=True, highlight=False)


def _bad(message: str) -> NoReturn:
    errors.print(f"[bold red]error:[/] {markup(message)}")
    raise typer.Exit(2)


def _provider_factory(
    provider: str, model: str | None, base_url: str | None, script: Path | None
) -> tuple[Callable[[Any], Provider], str]:
    """A per-task provider factory for eval, validated up front (bad input exits 2)."""
    if provider not in PROVIDERS:
        _bad(f"--provider must be one of {', '.join(PROVIDERS)}, not {provider!r}")
    if provider == "openai":
        if not model:
            _bad("--provider openai needs --model (the model name the endpoint serves)")
        try:  # build one now so a missing key is reported before any sandbox starts
            OpenAIProvider(model, base_url=base_url)
        except ProviderError as exc:
            _bad(str(exc))
        return (lambda task: OpenAIProvider(model, base_url=base_url)), model
    if provider == "scripted":
        if script is None:
            _bad("--provider scripted needs --script FILE (a JSON list of tool-call steps)")
        try:
            steps = load_oracle(script)
        except OracleError as exc:
            _bad(str(exc))
        return (lambda task: ScriptedProvider(steps, model=model or "scripted")), "scripted"
    return solution_provider, "oracle"


def _select(tasks: list[Task], ids: list[str], categories: list[str]) -> list[Task]:
    known = {t.id for t in tasks}
    missing = [i for i in ids if i not in known]
    if missing:
        _bad(
            f"no task with id {', '.join(map(repr, missing))} in the suite "
            f"(it has {len(known)} task(s))"
        )
    wrong = [c for c in categories if c not in CATEGORIES]
    if wrong:
        _bad(f"unknown category {', '.join(map(repr, wrong))}; use one of {', '.join(CATEGORIES)}")
    chosen = [
        t
        for t in tasks
        if (not ids or t.id in ids) and (not categories or t.category in categories)
    ]
    if not chosen:
        # an unknown --task is refused above, so only --category can have emptied it
        _bad(
            f"no task of category {', '.join(map(repr, categories))} in the suite "
            f"(it has {len(tasks)} task(s))"
        )
    return chosen


def _load_suite(suite: Path) -> list[Task]:
    """Every task of the suite; a task that does not load is refused with lint's findings for
    it (code, position, message), not the loader's words."""
    try:
        return discover_tasks(suite)
    except TaskError as exc:
        broken = []
        for root in find_task_dirs(suite):
            try:
                load_task(root)
            except TaskError:
                broken.append(root)
        found = [d for d in lint_paths(broken, isolated=True).diagnostics if d.severity == "error"]
        if not found:  # not a task's own error (two tasks share an id): the loader says it
            _bad(str(exc))
        for d in found:
            errors.print(shown(f"{d.file}:{d.line}:{d.column}: {d.code} {d.message}"), markup=False,
                         highlight=False, soft_wrap=True)  # fmt: skip
        _bad(f"{len(broken)} task(s) of {suite} do not load; nothing was run")


def eval_command(
    suite: Annotated[
        Path, typer.Argument(help="Folder holding the tasks (every task.json below).")
    ],
    task: Annotated[
        list[str] | None, typer.Option("--task", help="Only this task id (repeatable).")
    ] = None,
    category: Annotated[
        list[str] | None, typer.Option("--category", help="Only this category (repeatable).")
    ] = None,
    provider: Annotated[
        str, typer.Option(help="openai, oracle (writes each task's solution/) or scripted.")
    ] = "openai",
    model: Annotated[str | None, typer.Option(help="Model name for --provider openai.")] = None,
    base_url: Annotated[
        str | None,
        typer.Option("--base-url", help="OpenAI-compatible endpoint; key from OPENAI_API_KEY."),
    ] = None,
    script: Annotated[Path | None, typer.Option(help="Steps file for --provider scripted.")] = None,
    sandbox: SandboxOption = DEFAULT_KIND,
    image: ImageOption = None,
    jobs: Annotated[int, typer.Option(help="Tasks run at once.")] = 1,
    prices: Annotated[
        Path | None, typer.Option(help='JSON {model: {"input_per_mtok": x, "output_per_mtok": y}}.')
    ] = None,
    out: Annotated[
        Path | None, typer.Option(help="Write report.md, results.json and sessions here.")
    ] = None,
    repeat: Annotated[int, typer.Option(help="Runs per task (reports flake rate when > 1).")] = 1,
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="No progress on stderr (the report only).")
    ] = False,
    executor: Annotated[
        str, typer.Option(help="local (this machine) or ray (one Ray task per attempt).")
    ] = "local",
    address: Annotated[
        str | None,
        typer.Option(
            help="Ray cluster (HOST:PORT, ray://HOST:PORT, or auto = $RAY_ADDRESS); "
            "without it --executor ray starts a local Ray instance."
        ),
    ] = None,
) -> None:
    """Run a suite through the embedded harness and report pass rate, cost and latency.

    With --out: report.md, results.json, sessions.sqlite3 and a self-contained report.html.
    Compare two saved runs with `eval compare RUN_A RUN_B`.

    Exit status: 0 all passed, 1 some failed, 2 some unassessed (harness error) or bad input.
    """
    if jobs < 1 or repeat < 1:
        _bad("--jobs and --repeat must be at least 1")
    try:
        choice = choose_executor(executor, address)
        suite_runner = (
            partial(load_ray(choice).run_suite, choice=choice) if choice.remote else run_suite
        )
    except ExecutorError as exc:
        _bad(str(exc))
    if not suite.is_dir():
        _bad(f"no such suite folder: {suite}")
    found = _load_suite(suite)
    if not found:
        _bad(f"no task under {suite}: no task.json below it (`endstate-author new` makes one)")
    tasks = _select(found, task or [], category or [])
    price_table = None
    if prices is not None:
        try:
            price_table = load_prices(prices)
        except PriceError as exc:
            _bad(str(exc))
    if out is not None and out.exists() and not out.is_dir():
        _bad(f"--out {out} exists and is not a folder")
    factory, label = _provider_factory(provider, model, base_url, script)
    where = choose(sandbox, image, ready=True)  # one message up front, not one per task
    total = len(tasks) * repeat
    progress = Progress(
        TextColumn("[bold]eval[/]"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.description}"),
        console=errors,
        transient=True,
        disable=quiet,
    )
    try:
        with progress:
            bar = progress.add_task("starting", total=total)

            def done(result: object) -> None:
                assert isinstance(result, TaskResult)
                mark = "ERROR" if result.error else ("pass" if result.passed else "FAIL")
                if not quiet:  # tries are numbered from 1 wherever a person reads them
                    progress.console.print(
                        one_line(f"{mark:5} {result.task_id} (try {result.attempt + 1}, "
                                 f"{result.steps} steps, {result.usage.total_tokens:,} tokens, "
                                 f"{result.wall_clock_s:.1f}s)"),
                        markup=False,
                    )
                progress.update(bar, advance=1, description=result.task_id)

            outcome = suite_runner(
                tasks,
                jobs=jobs,
                repeat=repeat,
                provider_factory=factory,
                sandbox=where,
                suite_root=suite.resolve(),
                session_store_path=(out / "sessions.sqlite3") if out else None,
                on_result=done,
                provider_name=provider if provider != "openai" else f"openai:{base_url or 'api'}",
            )
    except KeyboardInterrupt:
        errors.print("interrupted: every sandbox was closed")
        raise typer.Exit(130) from None
    except ExecutorError as exc:
        _bad(str(exc))
    if not outcome.model:
        outcome.model = label
    facts = RunFacts(where.describe(), {t.id: content_hash(t.root) for t in tasks})
    data = results_json(outcome, price_table, facts)
    run = Run(out or Path("."), data, list(data["results"]))
    if out is not None:
        written = write_report(outcome, out, price_table, facts)
        # the page's transcripts come from the sessions saved beside results.json
        written.append(write_html(out / "report.html", render_report(run)))
        for path in written:
            errors.print(f"wrote {path}")
    print_report(run, console)
    raise typer.Exit(eval_exit_code(outcome.results))


def eval_exit_code(results: Sequence[Any]) -> int:
    """2 when any run errored (unassessed), else 1 when any failed, else 0.

    An unassessed task means the suite's result is unknown, which is worse news than a known
    failure and must not be mistaken for one by a CI script. (prove differs: there a failed
    check is a finding about the task, so 1 wins over unassessed checks.)
    """
    if any(r.error for r in results):
        return 2
    if any(not r.passed for r in results):
        return 1
    return 0


def _print_run(result: RunResult) -> None:
    if result.final_text:
        console.print(shown(result.final_text), markup=False)  # the model's words
    detail = (
        f"session {result.session_id}: stop {result.stop_reason}, {result.steps} steps, "
        f"{result.usage.total_tokens} tokens, {result.denied_calls} denied, "
        f"{len(result.compaction_events)} compactions, {result.unsettled_calls} unsettled"
    )
    errors.print(detail, markup=False)
    if result.error:
        errors.print(f"[bold red]error:[/] {markup(result.error)}")


def run_command(
    prompt: Annotated[
        str | None, typer.Argument(help="The instruction (optional with --resume).")
    ] = None,
    workdir: Annotated[Path, typer.Option(help="The folder the agent works in, in place.")] = Path(
        "."
    ),
    resume: Annotated[str | None, typer.Option(help="Continue this session id.")] = None,
    provider: Annotated[str, typer.Option(help="openai or scripted.")] = "openai",
    model: Annotated[str | None, typer.Option(help="Model name for --provider openai.")] = None,
    base_url: Annotated[
        str | None, typer.Option("--base-url", help="OpenAI-compatible endpoint.")
    ] = None,
    script: Annotated[Path | None, typer.Option(help="Steps file for --provider scripted.")] = None,
    max_steps: Annotated[int, typer.Option("--max-steps", help="Model calls at most.")] = 25,
    timeout_s: Annotated[
        float, typer.Option("--timeout-s", help="Wall clock for the run.")
    ] = 600.0,
    store: Annotated[Path, typer.Option(help="Session store (SQLite).")] = DEFAULT_STORE,
) -> None:
    """One agent run, directly in --workdir (no sandbox: it edits your files there)."""
    if provider not in ("openai", "scripted"):
        _bad("--provider must be openai or scripted for run")
    if not workdir.is_dir():
        _bad(f"--workdir {workdir} is not a folder")
    if max_steps < 1 or timeout_s <= 0:
        _bad("--max-steps and --timeout-s must be positive")
    if resume is None and not (prompt and prompt.strip()):
        _bad("give a PROMPT, or --resume SESSION to continue one")
    factory, _ = _provider_factory(provider, model, base_url, script)
    try:
        sessions = SessionStore(store)
        session = (
            sessions.load(resume)
            if resume
            else sessions.create(
                model=model or provider, workdir=str(workdir.resolve()), title=prompt or ""
            )
        )
    except SessionError as exc:
        _bad(str(exc))
    if resume and session.workdir and Path(session.workdir) != workdir.resolve():
        _bad(
            f"session {resume} worked in {session.workdir}, not {workdir.resolve()}; "
            f"pass --workdir {session.workdir}"
        )
    errors.print(
        f"[yellow]note:[/] the agent works directly in {workdir.resolve()} (not a "
        "sandbox); destructive commands are still refused by the default policy."
    )
    agent = factory(None)
    loop = AgentLoop(
        agent,
        DirectoryWorkspace(workdir),
        session,
        max_steps=max_steps,
        deadline=time.monotonic() + timeout_s,
        system_prompt=DEFAULT_SYSTEM_PROMPT,
    )
    try:
        if resume is None:
            result = loop.start(prompt or "")
        elif prompt and prompt.strip():
            result = loop.follow_up(prompt)
        else:
            result = loop.resume()
    except KeyboardInterrupt:
        errors.print(f"interrupted; resume with --resume {session.id}")
        raise typer.Exit(130) from None
    except SessionError as exc:
        _bad(str(exc))
    _print_run(result)
    raise typer.Exit(1 if result.stop_reason == "error" and result.error else 0)


def sessions_command(
    store: Annotated[Path, typer.Option(help="Session store (SQLite).")] = DEFAULT_STORE,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """List saved agent sessions, newest first."""
    if not store.exists():
        if as_json:
            console.print("[]")
        else:
            console.print(f"no sessions yet ({store} does not exist)")
        return
    try:
        rows = SessionStore(store).list()
    except SessionError as exc:
        _bad(str(exc))
    if as_json:
        console.print_json(json.dumps([row.__dict__ for row in rows]))
        return
    table = Table("id", "updated", "status", "messages", "model", "workdir", "title")
    for row in rows:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(row.updated_at))
        table.add_row(
            row.id, when, row.status, str(row.messages), row.model, row.workdir, row.title[:40]
        )
    console.print(table)


app = typer.Typer(add_completion=False, no_args_is_help=True, help=__doc__)
app.command("eval")(eval_command)
app.command("run")(run_command)
app.command("sessions")(sessions_command)

if __name__ == "__main__":
    app()
