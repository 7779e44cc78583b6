"""What an editor may show of a task's proof before prove runs, and as its checks end."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from endstate_author import __version__
from endstate_author.engine.diagnostics import Diagnostic
from endstate_author.prove import cache, checkcache, messages
from endstate_author.prove.findings import static_warnings
from endstate_author.prove.model import DEFAULT_MUTANTS, CheckResult, ProveOptions
from endstate_author.prove.run import load_for_prove, plan_jobs
from endstate_author.prove.wire import Event, decode_line, report_checks
from endstate_harness.sandbox.choice import SandboxChoice, resolve_sandbox


@dataclass
class KnownProof:
    """A task's checks as the cache knows them for the files on disk now."""

    task_id: str
    order: list[str]
    """Every planned check, in prove's order."""
    results: dict[str, CheckResult] = field(default_factory=dict)
    """The checks whose inputs did not change: their cached results."""
    static: list[Diagnostic] = field(default_factory=list)
    """The lint findings prove repeats beside its checks (ES311)."""

    @property
    def pending(self) -> list[str]:
        """The checks that must run again (their inputs changed, or they never ran)."""
        return [name for name in self.order if name not in self.results]


def cached_proof(
    root: Path,
    sandbox: SandboxChoice | None,
    *,
    only: Sequence[str] = (),
    mutants: int | None = DEFAULT_MUTANTS,
    strict: bool = False,
) -> KnownProof | None:
    """The cached results of ``root``'s checks under prove's options (None: the task does
    not load, so prove will say why and nothing is known). ``sandbox`` is the one prove said
    it chose (:func:`read_event`), or :func:`decided_sandbox` before it has said; with none,
    nothing is looked up: only the lint findings are known."""
    task, _ = load_for_prove(root)
    if task is None:
        return None
    static = static_warnings(root, root.parent)
    if sandbox is None:
        return KnownProof(task.id, [], static=static)
    spec = sandbox.for_grading()
    options = ProveOptions(sandbox=spec, only=tuple(only), mutants=mutants, strict=strict)
    whole = cache.load(cache.fingerprint(task, options))
    if whole is not None:
        results = {c.check: replace(c, cached=True) for c in whole.checks}
        return KnownProof(task.id, list(results), results, static)
    planned = list(
        plan_jobs(
            task,
            only,
            mutant_limit=mutants,
            strict=strict,
            sandbox_key=(spec.kind, spec.image or ""),
        )
    )
    known = KnownProof(task.id, [name for _, name, _ in planned], static=static)
    for (_, name, _), key in checkcache.keys(task, options, planned):
        hit = checkcache.load(key)
        if hit is not None:
            known.results[name] = replace(hit, cached=True)
    return known


def decided_sandbox(kind: str) -> SandboxChoice:
    """The sandbox prove will grade in for ``--sandbox kind``: the one sandbox choice every
    command makes, asked without side effects (no image pulled), for looking up the cache
    before prove has said what it chose."""
    return resolve_sandbox(kind, version=__version__, pull=False).for_grading()


def findings(
    root: Path, results: Sequence[CheckResult], static: Sequence[Diagnostic]
) -> list[Diagnostic]:
    """The findings prove reports for ``results`` (some of a task's checks), with ``static``."""
    return [*messages.diagnostics(root, results), *static]


def read_event(line: str) -> Event | None:
    """A line prove printed on stderr with ``--progress-json``, as the event it is (None for
    any other line): :mod:`endstate_author.prove.wire` reads it.

    Raises:
        WireVersionError: the prove that printed it writes a newer wire version.
    """
    return decode_line(line)


def checks_of_report(report: object) -> list[CheckResult]:
    """The check results of prove's ``-o json`` report, read as the wire defines them.

    Raises:
        WireVersionError: the report is of a newer wire version.
    """
    return report_checks(report)


def remove_containers_of(pid: int) -> int:
    """Remove the sandbox containers a killed prove process (``pid``) left: an editor that
    had to kill a cancelled proof cleans up after it. Returns how many were removed."""
    # deferred: the Docker client (~75 ms) is imported only when a Docker proof was killed
    from endstate_harness.sandbox.docker.daemon import (
        LABEL,
        PID_LABEL,
        connect,
        remove_container,
    )

    client = connect(timeout_s=10)
    removed = 0
    try:
        labels = [f"{LABEL}=1", f"{PID_LABEL}={pid}"]
        # the killed proof's watcher removes the same containers: one it removed first, or is
        # removing, is skipped (ignore_removed, remove_container), never an error here
        listed = client.containers.list(all=True, filters={"label": labels}, ignore_removed=True)
        for container in listed:
            removed += remove_container(container)
    finally:
        client.close()
    return removed
