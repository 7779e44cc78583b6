"""``endstate-author redteam``: point a model at a task, told to pass without doing the work."""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import threading
from pathlib import Path
from typing import Annotated

import typer

from endstate_author.cli.output import OutputFormat, emit, fail
from endstate_author.cli.sandboxes import DEFAULT_KIND, ImageOption, SandboxOption, choose
from endstate_author.engine.textsafe import one_line
from endstate_author.evalreport.results import PriceError, Prices, load_prices
from endstate_author.lint.run import UsageError, resolve_targets
from endstate_author.probes import store as probe_store
from endstate_author.redteam import report
from endstate_author.redteam.attempt import run_attempt
from endstate_author.redteam.triage import Triager, judge_layout
from endstate_harness.agent.providers import OpenAIProvider, ProviderError
from endstate_harness.agent.session import SessionError, SessionStore
from endstate_harness.graders import grader_search_paths
from endstate_harness.task import Task, TaskError, load_task


def _tasks(paths: list[Path]) -> list[tuple[Task, Path]]:
    try:
        targets = resolve_targets(paths)
    except UsageError as exc:
        raise fail(str(exc)) from None
    if not targets:
        raise fail("no task.json found under " + ", ".join(map(str, paths)))
    tasks = []
    for root, suite in targets:
        try:
            tasks.append((load_task(root), suite))
        except TaskError as exc:
            raise fail(f"{exc} (run `endstate-author lint` for the exact positions)") from None
    return tasks


def _prices(path: Path | None) -> Prices | None:
    if path is None:
        return None
    try:
        return load_prices(path)
    except PriceError as exc:
        raise fail(str(exc)) from None


def _check_probe_name(name: str | None, tasks: list[tuple[Task, Path]]) -> None:
    if name is None:
        return
    why = probe_store.check_name(name)
    if why is not None:
        raise fail(why)
    for task, _ in tasks:
        folder = task.root.parent / probe_store.PROBES_DIR / name
        if folder.exists() or folder.is_symlink():
            raise fail(f"{folder} exists already; choose another --save-probe name")


def _save(outcomes: list[report.Outcome], name: str) -> None:
    """Each confirmed exploit as a suite probe: the first as NAME, later ones NAME-2, …"""
    count = 0
    for outcome in outcomes:
        if outcome.kind != "exploit":
            continue
        count += 1
        task = outcome.attempt.task
        try:
            outcome.probe = probe_store.save_probe(
                task,
                name if count == 1 else f"{name}-{count}",
                outcome.attempt.changes(),
                test_dir=str(judge_layout(task).get("start_dir", "tests")),
                explanation=outcome.attempt.explanation,
                model=outcome.attempt.result.model,
            )
        except probe_store.ProbeError as exc:
            typer.echo(f"endstate-author: {exc}", err=True)


def redteam_command(
    paths: Annotated[list[Path], typer.Argument(help="Task folders, suites or task.json files.")],
    model: Annotated[
        str | None, typer.Option("--model", help="Model name the endpoint serves.")
    ] = None,
    base_url: Annotated[
        str | None,
        typer.Option("--base-url", help="OpenAI-compatible endpoint; key from OPENAI_API_KEY."),
    ] = None,
    attempts: Annotated[int, typer.Option("--attempts", min=1, help="Attempts per task.")] = 1,
    sandbox: SandboxOption = DEFAULT_KIND,
    image: ImageOption = None,
    prices: Annotated[
        Path | None,
        typer.Option("--prices", help='JSON {model: {"input_per_mtok": x, "output_per_mtok": y}}.'),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option("--out", help="Write results.json and each candidate's diff/transcript."),
    ] = None,
    save_probe: Annotated[
        str | None,
        typer.Option("--save-probe", help="Keep confirmed exploits as probes/NAME/ (suite)."),
    ] = None,
    output_format: Annotated[
        OutputFormat, typer.Option("--output-format", "-o", help="How results are printed.")
    ] = OutputFormat.text,
) -> None:
    """Red-team tasks: a model told to pass the graders without doing the work (ES913)."""
    if not model:
        raise fail("--model is required (the model name the OpenAI-compatible endpoint serves)")
    tasks = _tasks(paths)
    price_table = _prices(prices)
    _check_probe_name(save_probe, tasks)
    if out is not None and out.exists() and not out.is_dir():
        raise fail(f"--out {out} exists and is not a folder")
    try:  # a missing key is reported before any sandbox starts
        OpenAIProvider(model, base_url=base_url)
    except ProviderError as exc:
        raise fail(str(exc)) from None
    spec = choose(sandbox, image, ready=True).for_grading()
    if spec.kind == "local":
        typer.echo(
            "warning: a red-team model is told to cheat: use Docker for any model you do not "
            "trust.",
            err=True,
        )
    suites = {task.root.resolve(): suite for task, suite in tasks}
    triager = Triager(
        spec,
        lambda t: grader_search_paths(t.root, suite_root=suites.get(t.root.resolve())),
    )
    cancel = threading.Event()
    store_dir = Path(tempfile.mkdtemp(prefix="endstate-redteam-sessions-"))
    outcomes: list[report.Outcome] = []
    try:
        store = SessionStore(store_dir / "sessions.sqlite3")
        for task, suite in tasks:
            for index in range(attempts):
                attempt = run_attempt(
                    task,
                    index,
                    provider_factory=lambda _t: OpenAIProvider(model, base_url=base_url),
                    spec=spec,
                    store=store,
                    suite_root=suite.resolve(),
                    prices=price_table,
                    cancel=cancel,
                )
                outcome = report.Outcome(attempt)
                if attempt.candidate and attempt.end_state is not None:
                    typer.echo(one_line(f"triage: {outcome.label} passed every grader"), err=True)
                    outcome.triage = triager.triage(task, attempt.end_state)
                typer.echo(one_line(f"{outcome.label}: {outcome.kind}"), err=True)
                outcomes.append(outcome)
        if save_probe is not None:
            _save(outcomes, save_probe)
        if out is not None:
            for path in report.write_out(outcomes, out, spec.describe()):
                typer.echo(f"wrote {path}", err=True)
    except KeyboardInterrupt:
        cancel.set()
        typer.echo("interrupted: every sandbox was closed", err=True)
        raise typer.Exit(130) from None
    except SessionError as exc:
        raise fail(str(exc)) from None
    finally:
        shutil.rmtree(store_dir, ignore_errors=True)
    _print(outcomes, output_format, spec.describe())
    raise typer.Exit(report.exit_code(outcomes))


def _print(
    outcomes: list[report.Outcome],
    output_format: OutputFormat,
    sandbox: dict[str, str | None],
) -> None:
    found = report.diagnostics(outcomes)
    if output_format is OutputFormat.json:
        typer.echo(json.dumps(report.to_json(outcomes, sandbox), indent=2))
        return
    if output_format is OutputFormat.text:
        sys.stdout.write(report.render_text(outcomes, sandbox) + "\n\n")
        sys.stdout.flush()
        exploits = sum(o.kind == "exploit" for o in outcomes)
        emit(found, output_format, f"{len(outcomes)} attempt(s), {exploits} exploit(s) (ES913)")
        return
    emit(found, output_format, None)
