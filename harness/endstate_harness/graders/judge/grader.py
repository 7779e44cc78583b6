"""``judged_tests``: the grader whose verdict never shares a process with the code it judges.
Its text is vendored into suites (``VENDORED_MODULES`` in :mod:`endstate_harness.graders.names`):
standard library and harness imports only."""

import inspect
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
from pathlib import Path, PurePosixPath
from typing import Any

from endstate_harness.errors import SandboxError
from endstate_harness.fdtree import remove_tree
from endstate_harness.graders.judge.evidence import MAX_LISTED, evidence, one_test, tail_words
from endstate_harness.graders.judge.launch import (
    JUDGE_MODULE,
    _pump_to_child,
    _pump_to_judge,
    child_command,
    hash_seed_of,
    judge_argv,
    judge_env,
    shared_cpu,
)
from endstate_harness.process import watchdog
from endstate_harness.process import zygote as warm
from endstate_harness.process.cleanup import defer_signals
from endstate_harness.sandbox.base import Channel, Sandbox
from endstate_harness.verdict import Check, Verdict

_NOT_MODULES = frozenset({"setup", "conftest", "noxfile", "tasks", "manage"})
JudgeProcess = subprocess.Popen[bytes] | warm.WarmProcess
"""The judge's process: a fresh one, or a run forked from the warm interpreter."""
TIMED_OUT = "ran within its time bound"  # the check a variant cut at its bound fails
CALL_TIMEOUT_S = 30.0
"""Longest a single call into the code under test may take before the case fails."""


def judged_tests(
    sandbox: Sandbox,
    *,
    start_dir: str = "tests",
    pattern: str = "test*.py",
    top_level_dir: str = ".",
    modules: list[str] | None = None,
    visible: bool = True,
    child_helpers: list[str] | None = None,
    timeout_s: float = 120.0,
    min_tests: int = 1,
    name: str = "",
    python: str = "python3",
) -> Verdict:
    """Pass when every trusted test passes against the end state, judged out of process.

    Args (all keyword; the defaults suit a ``tests/`` package at the root of the fixture):
        start_dir: the folder test discovery starts in (``tests``), in the holdout and, with
            ``visible``, in the pristine fixture.
        pattern: test file name pattern (``test*.py``).
        top_level_dir: the folder test module names are relative to (``.``).
        modules: the top-level modules of the code under test; by default every top-level
            module or package of the fixture and of the end state, except ``start_dir``, the
            standard library's names and the trusted files' own.
        visible: also run the fixture's own tests under ``start_dir``, as the task shipped
            them (an agent's edits to them change nothing here).
        child_helpers: paths (in the holdout or the fixture, e.g. ``tests/doubles.py``) of
            test-double modules that must live where the package runs: a fake clock the
            package calls, a stream it writes. They are sent to the child and run there
            (never written to its file system); the tests import them by their module name
            and use their objects by reference. Keep expected values out of them.
        timeout_s: wall clock for the whole run (120 s); on expiry the remaining cases fail.
        min_tests: the least number of tests that must run (1).
        name: label for the checks; default ``"judge <start_dir>/"``.
        python: the interpreter that runs the code under test in the sandbox (``python3``).

    Checks returned (each named ``<label>: …``): ``the judge reported`` – the judge finished
    and sent its report; ``all expected tests ran`` – at least ``min_tests`` tests and every
    trusted test module loaded; ``all tests passed`` – no failure or error (a skip counts only
    when the trusted test code itself declares it).

    Known limits: the holdout must talk to the package through values, and the package's own
    operators never decide an assertion (see :mod:`endstate_harness.graders.judge.proxies`;
    lint reports both as ES508); tests run with the host's Python, the package with the
    sandbox's; ``str``, ``len`` and conversions of the agent's objects are computed by the
    agent's code (they see none of the judge's values).
    """
    return judge_verdict(
        sandbox, start_dir=start_dir, pattern=pattern, top_level_dir=top_level_dir,
        modules=modules, visible=visible, child_helpers=child_helpers, timeout_s=timeout_s,
        min_tests=min_tests, name=name, python=python,
    )


def judge_verdict(
    sandbox: Sandbox,
    *,
    start_dir: str,
    pattern: str,
    top_level_dir: str,
    modules: list[str] | None,
    visible: bool,
    child_helpers: list[str] | None,
    timeout_s: float,
    min_tests: int,
    name: str,
    python: str,
) -> Verdict:
    """The body of :func:`judged_tests`, for any object with the judge's sandbox methods
    (``fixture_files``, ``holdout_files``, ``end_state_files``, ``open_channel``): the
    vendored copy (``endstate-author vendor``) calls it with endstate 0.3.0's sandboxes."""
    verdicts = _judge(sandbox, None, start_dir=start_dir, pattern=pattern,
                      top_level_dir=top_level_dir, modules=modules, visible=visible,
                      child_helpers=child_helpers, timeout_s=timeout_s, min_tests=min_tests,
                      name=name, python=python)
    return verdicts[0]


def judge_variants(
    sandbox: Sandbox, variants: list[dict[str, str | None]],
    bound: tuple[float, float] | None = None, **args: Any
) -> list[Verdict]:
    """:func:`judged_tests`' verdict on each variant of the sandbox's end state, in one judge
    and one child: ``variants`` map tree paths to the text each holds instead (``None``: the
    file is gone). prove's mutants differ from the solution in a file each, so running them
    in one child saves a judge, a child and a sandbox per mutant; each variant's code still
    runs in a process of its own (forked by the child before any code under test is
    imported), and what its trusted tests leave in the judge is put back before the next
    variant's (:mod:`~endstate_harness.graders.judge.leftovers`), so one variant's memory
    never reaches another's.

    The list may be shorter than ``variants``: the batch stops after a variant whose child did
    not end cleanly (hung, crashed) or that the judge could not run; grade the rest apart.
    Each variant's files are written back when its process ends, but a batch that stopped on
    a hung variant leaves them: grade nothing else in that sandbox afterwards.

    ``bound``: (factor, floor s): a variant past ``max(factor × the tests' time on the tree as
    it is, floor)`` twice fails ``TIMED_OUT``, and the batch goes on (``main.run_variants``).
    ``args``: :func:`judged_tests`' keyword arguments (a grader entry's ``args``), with its
    defaults; one it does not take raises ``TypeError``."""
    if not variants:
        return []
    defaults = {n: p.default for n, p in inspect.signature(judged_tests).parameters.items()
                if p.kind is p.KEYWORD_ONLY}
    return _judge(sandbox, variants, **{**defaults, **args, "bound": bound})


def _judge(
    sandbox: Sandbox,
    variants: list[dict[str, str | None]] | None,
    *,
    start_dir: str,
    pattern: str,
    top_level_dir: str,
    modules: list[str] | None,
    visible: bool,
    child_helpers: list[str] | None,
    timeout_s: float,
    min_tests: int,
    name: str,
    python: str,
    bound: tuple[float, float] | None = None,
) -> list[Verdict]:
    label = name or f"judge {start_dir.rstrip('/')}/"
    names = (
        f"{label}: the judge reported",
        f"{label}: all expected tests ran",
        f"{label}: all tests passed",
    )
    trusted_files = _trusted_files(sandbox, start_dir, visible)
    if not any(_matches(rel, start_dir, pattern) for rel in trusted_files):
        why = f"no trusted test file matching {pattern!r} under {start_dir}/ (holdout or fixture)"
        return [_all_failed(names, why)] * len(variants or [None])
    top_names = _module_names(sandbox, trusted_files, start_dir, modules)
    helpers: dict[str, str] = {}
    for rel in child_helpers or []:
        data = trusted_files.get(rel.strip("/"))
        if data is None or not rel.endswith(".py"):
            why = f"child helper {rel!r} is not a Python file of the holdout or under {start_dir}/"
            return [_all_failed(names, why)] * len(variants or [None])
        helpers[rel.strip("/")[:-3].replace("/", ".")] = data.decode("utf-8", errors="replace")
    config: dict[str, Any] = {
        "start_dir": start_dir,
        "pattern": pattern,
        "top_level_dir": top_level_dir,
        "modules": sorted(top_names),
        "helpers": helpers,
        "timeout_s": timeout_s,
        "call_timeout_s": min(CALL_TIMEOUT_S, timeout_s),
        # the order the run chose (a sandbox of endstate 0.3.0, in a vendored copy, has none)
        "order": str(getattr(sandbox, "test_order", "") or ""),
    }
    total_s = timeout_s
    if variants is not None:
        config.update(variants=variants, bound=list(bound) if bound else None)
        total_s = timeout_s * (len(variants) + 1)  # and the solution runs a bound takes
    workdir = Path(tempfile.mkdtemp(prefix="endstate-judge-"))
    watchdog.protect(workdir)  # a cluster unit may be SIGKILLed mid-check
    try:
        trusted = workdir / "trusted"
        # what may be large (a batch's variants, the helpers' sources) goes in a file the
        # judge reads at its start: a command line or a zygote's message has a size limit
        payload = workdir / "payload.json"
        payload.write_text(json.dumps({k: config.pop(k) for k in PAYLOAD_KEYS if k in config}),
                           encoding="utf-8")
        config["payload_file"] = str(payload)
        for rel, data in trusted_files.items():
            target = trusted / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        with shared_cpu() as cpu:  # they take turns: on one CPU no turn wakes another
            if cpu is not None:
                config["cpu"] = cpu
            report, child_err = _run(sandbox, trusted, python, total_s, config)
    finally:
        remove_tree(workdir)
        watchdog.release(workdir)
    if variants is not None:
        if report is None or "fatal" in report:
            return []
        return [_verdict_of(sandbox, one, names, min_tests, "", with_evidence=False)
                for one in report.get("variants", [])[:len(variants)] if isinstance(one, dict)]
    return [_verdict_of(sandbox, report, names, min_tests, child_err)]


def _verdict_of(sandbox: Sandbox, report: dict[str, Any] | None, names: tuple[str, ...],
                min_tests: int, child_err: str, with_evidence: bool = True) -> Verdict:
    if report is None or "fatal" in report:
        why = (
            "the judge did not finish" if report is None else f"the judge failed: {report['fatal']}"
        )
        return _all_failed(names, f"{why}\n{child_err[-1000:]}".strip())
    checks = _checks(report, names, min_tests, child_err)
    if type(report.get("timed_out")) is str:  # a variant cut at its bound (judge_variants)
        label = names[0].rsplit(": ", 1)[0]
        checks.append(Check(name=f"{label}: {TIMED_OUT}", passed=False, detail=report["timed_out"]))
    verdict = Verdict.from_checks(checks)
    if not with_evidence:  # a variant's verdict says only whether it passed, and why not
        return verdict
    # the evidence rides on the verdict as a field the harness reads (endstate 0.3.0's
    # Verdict, in a vendored copy, ignores it)
    found = evidence(report, sandbox.holdout_files())
    return type(verdict).model_validate({**dict(verdict), "evidence": found})


def _all_failed(names: tuple[str, ...], why: str) -> Verdict:
    return Verdict.from_checks(
        [Check(name=names[0], passed=False, detail=why)]
        + [Check(name=n, passed=False, detail="no report") for n in names[1:]]
    )


def _matches(rel: str, start_dir: str, pattern: str) -> bool:
    path = PurePosixPath(rel)
    start = PurePosixPath(start_dir.strip("/") or ".")
    inside = start == PurePosixPath(".") or start in path.parents
    return inside and path.match(pattern)


def _trusted_files(sandbox: Sandbox, start_dir: str, visible: bool) -> dict[str, bytes]:
    """The pristine fixture's files under ``start_dir`` (and the package markers above it),
    then the holdout's, which win where both have a file."""
    out: dict[str, bytes] = {}
    start = start_dir.strip("/")
    for rel, data in sandbox.fixture_files().items():
        if not start or rel.startswith(start + "/"):
            # Without ``visible`` only the package markers come along, so that the holdout's
            # test modules still import as ``tests.<name>``.
            if visible or PurePosixPath(rel).name == "__init__.py":
                out[rel] = data
    out.update(sandbox.holdout_files())
    return out


def _module_names(
    sandbox: Sandbox, trusted: dict[str, bytes], start_dir: str, modules: list[str] | None
) -> set[str]:
    """Top-level names the judge answers with proxies (see ``modules`` above)."""
    if modules is not None:
        return {m.partition(".")[0] for m in modules}
    trusted_tops = {rel.split("/", 1)[0] for rel in trusted}
    paths = list(sandbox.fixture_files()) + list(sandbox.end_state_files())
    found: set[str] = set()
    for rel in paths:
        first, _, rest = rel.partition("/")
        if rest:
            if rel.endswith(".py"):
                found.add(first)
        elif first.endswith(".py"):
            found.add(first[:-3])
    stdlib = set(getattr(sys, "stdlib_module_names", ()))
    start_top = start_dir.strip("/").split("/", 1)[0]
    return {
        n for n in found
        if n.isidentifier() and n not in stdlib and n not in _NOT_MODULES
        and n != start_top and n not in trusted_tops
    }


def _run(
    sandbox: Sandbox, trusted: Path, python: str, timeout_s: float, config: dict[str, Any]
) -> tuple[dict[str, Any] | None, str]:
    """Start the judge on the host, then (once it holds the trusted files) the child in the
    sandbox; connect them, collect the report of a judge that exited normally."""
    walls = getattr(sandbox, "walls", None)  # plain endstate's sandbox (vendored) has none
    child_argv = child_command(python, private_tmp=callable(walls) and walls() in (
        "bubblewrap", "docker"))
    report_r, report_w = os.pipe()
    mine, theirs = socket.socketpair()  # the judge's first stdin: says ready, takes the channel
    config = {**config, "trusted_dir": str(trusted), "report_fd": report_w}
    channel: Channel | None = None
    judge: JudgeProcess | None = None
    relay: list[int] = []
    try:
        with defer_signals():  # started and recorded as one step: the finally below ends it
            judge = _start_judge(json.dumps(config), trusted, report_w, theirs.fileno(),
                                 hash_seed_of(sandbox))
        theirs.close()
        os.close(report_w)
        report_w = -1
        if not _ready(mine, min(timeout_s, READY_S)):
            return _report(report_r, judge, 5.0), ""  # its own failure, or nothing
        channel = sandbox.open_channel(child_argv, timeout_s=timeout_s + 5)
        # a local child: the judge talks to it with no relay (a channel of another kind, as
        # the vendored copy may be given, has no ``direct``: relayed as before)
        direct = channel.direct() if hasattr(channel, "direct") else None
        if direct is None:
            to_judge_r, to_judge_w = os.pipe()
            from_judge_r, from_judge_w = os.pipe()
            relay = [to_judge_w, from_judge_r]
            socket.send_fds(mine, [b"C"], [to_judge_r, from_judge_w])
            os.close(to_judge_r)
            os.close(from_judge_w)
            for pump, fd in ((_pump_to_child, from_judge_r), (_pump_to_judge, to_judge_w)):
                threading.Thread(target=pump, args=(fd, channel), daemon=True).start()
            relay = []  # the pumps own and close them
        else:
            socket.send_fds(mine, [b"C"], list(direct))
        mine.close()
        return _report(report_r, judge, timeout_s + 10), channel.stderr_text()
    except SandboxError:
        raise
    except (OSError, ValueError) as exc:
        return {"fatal": f"{type(exc).__name__}: {exc}"}, ""
    finally:
        mine.close()
        if judge is not None and judge.poll() is None:
            judge.kill()
        if judge is not None:
            judge.wait()
            for pipe in (judge.stdin, judge.stdout):
                if pipe is not None:
                    try:
                        pipe.close()
                    except OSError:
                        pass
        if channel is not None:
            channel.close()
        for fd in (report_r, report_w, *relay):
            if fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass


PAYLOAD_KEYS = ("variants", "helpers")
"""The parts of the judge's configuration that grow with the task (a batch of four dozen
mutants of a 10 KB module is 480 KB: more than one command-line argument may hold)."""

READY_S = 60.0
"""Longest the judge may take to start and read the trusted files (an interpreter's start,
under load) before the grading fails."""


def _ready(control: socket.socket, limit: float) -> bool:
    """Whether the judge says it holds the trusted files, within ``limit``."""
    control.settimeout(limit)
    try:
        return control.recv(1) == b"R"
    except OSError:
        return False
    finally:
        control.settimeout(None)


def _report(fd: int, judge: JudgeProcess, limit: float) -> dict[str, Any] | None:
    """The report, accepted only from a judge that then exited normally (a report written
    by anything else, or a judge killed after one was written, is no report)."""
    text = _read_report(fd, judge, limit)
    try:
        code = judge.wait(timeout=5)
    except subprocess.TimeoutExpired:
        judge.kill()
        return None
    if code != 0 or not text:
        return None
    return json.loads(text)  # type: ignore[no-any-return]


def _read_report(fd: int, judge: JudgeProcess, limit: float) -> str:
    """Everything the judge writes to its report pipe, or "" if it does not finish in time."""
    done = threading.Event()
    chunks: list[bytes] = []

    def read() -> None:
        while True:
            data = os.read(fd, 1 << 16)
            if not data:
                break
            chunks.append(data)
        done.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    if not done.wait(limit):
        judge.kill()
        done.wait(5)
    return b"".join(chunks).decode("utf-8", errors="replace")


def _start_judge(config_json: str, trusted: Path, report_w: int, control: int,
                 hash_seed: str = "0") -> JudgeProcess:
    """The judge, forked from a warm interpreter (:mod:`endstate_harness.process.zygote`) when one
    can start, else a fresh process; the same process either way. Its stdin and stdout are
    ``control``, a socket on which it says it is ready and receives the child's channel.
    ``hash_seed``: the sandbox's (a warm judge serves only its own seed: the environment is
    its key)."""
    env = judge_env(hash_seed)
    zygote = warm.zygote_for(JUDGE_MODULE, env)
    if zygote is not None:
        try:
            return zygote.spawn(config_json, cwd=str(trusted), report_fd=report_w,
                                stdio=(control, control))
        except OSError:
            pass  # a zygote that cannot fork now: a fresh process does the same job
    return subprocess.Popen(
        judge_argv(config_json),
        cwd=trusted,
        stdin=control,
        stdout=control,
        stderr=subprocess.DEVNULL,
        pass_fds=(report_w,),
        env=env,
        start_new_session=True,
    )


def _checks(
    report: dict[str, Any], names: tuple[str, ...], min_tests: int, child_err: str
) -> list[Check]:
    outcomes = [o for o in report.get("outcomes", []) if isinstance(o, dict)]
    broken = [o for o in outcomes if o.get("outcome") in ("failed", "error", "unexpected_success")]
    load_errors = [o for o in broken if "_FailedTest" in str(o.get("id")) or
                   str(o.get("id", "")).startswith("unittest.loader.")]
    ran = [o for o in outcomes if o.get("outcome") != "skipped"]
    ran_ok = len(ran) >= min_tests and not load_errors
    why_ran = f"{len(ran)} test(s) ran (at least {min_tests} required)"
    if load_errors:
        why_ran += "; trusted test modules failed to load: " + "; ".join(
            one_test(o) for o in load_errors
        )
    detail = ""
    if broken:
        shown = [one_test(o) for o in broken[:MAX_LISTED]]
        more = len(broken) - len(shown)
        detail = f"{len(broken)} of {len(outcomes)} tests did not pass: " + "; ".join(shown)
        if more:
            detail += f"; and {more} more test(s) not listed"
        if report.get("child"):
            detail += f"; the code under test: {report['child']}"
        if child_err.strip():
            detail += "; its stderr ends: " + tail_words(child_err, 300)
    return [
        Check(name=names[0], passed=True, detail=f"Python {report.get('python', '?')} judge"),
        Check(name=names[1], passed=ran_ok, detail=why_ran),
        Check(name=names[2], passed=bool(outcomes) and not broken,
              detail=detail or f"{len(outcomes)} passed"),
    ]
