"""endstate-author's hardened graders, vendored so that plain endstate 0.3.0 can run them.

This module was written by ``endstate-author vendor SUITE`` (do not edit it: run the command
again, and ``endstate-author lint`` says with ES213 when this copy is stale). It needs the
standard library and what endstate 0.3.0 provides, nothing of endstate-author. endstate
imports a grader module from ``sys.path``, so put the suite folder on it::

    PYTHONPATH=SUITE endstate eval --suite SUITE ...

endstate-author itself finds it in the suite folder (task-format.md §7).

``tests_pass`` is ``endstate_harness.graders:tests_pass`` unchanged: it only needs
``sandbox.run`` and the reading API, which endstate's sandboxes have.

``judged_tests`` keeps its promise that the verdict is decided in a process that never runs
the agent's code, as far as endstate 0.3.0's sandboxes allow:

* in endstate-author's own harness (a sandbox with ``open_channel``) it is exactly the
  toolkit's judge;
* with endstate's ``LocalSandbox`` or ``DockerSandbox`` the **judge** (the trusted tests:
  the fixture's own tests under ``start_dir`` and the holdout, read from the task folder
  beside ``sandbox.fixture`` where endstate's ``load_task`` finds them, never from the live
  tree) runs on the host in a process of its own, with the interpreter that runs endstate;
  the **child** (the only process that imports the package) runs on a fresh copy of the end
  state as sealed (endstate's ``end_state_files()``; a file's bytes are taken from the live
  tree where they still match that snapshot) without the holdout: a host process in a
  temporary folder for ``LocalSandbox``, ``docker exec -i`` in the task's container, in a
  folder of the bind-mounted live tree, for ``DockerSandbox``. While it runs, the holdout
  files endstate staged into the live tree are taken out (and put back afterwards).
  A child stuck in a call is ended by ``SIGALRM`` after ``timeout_s`` (or with the container).

Honest limits under endstate 0.3.0: endstate stages the holdout into the live tree before
grading and never refreshes that tree, so code that another grader runs (``tests_pass``,
``command_succeeds``) can read the holdout and change what later graders see (this judge
reads neither: only the task folder and the sealed snapshot); ``LocalSandbox`` isolates
nothing (code under test can read the task folder on the host). With any other sandbox
``judged_tests`` falls back to ``tests_pass``'s in-process run and says so in a check named
``… verdict decided in-process``.
"""

from __future__ import annotations

import ast
import contextlib
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType
from typing import Any, cast

from endstate.evals import Check, Sandbox, SandboxError, Verdict

# Replaced by the code they name when the module is vendored (see vendoring.render).
from endstate_harness.graders.judge.grader import judge_env, judge_verdict
from endstate_harness.graders.unittest_grader import _parse, tests_pass

_RUNNER_SRC = ""
"""The source of endstate_harness/inside/unittest_runner.py (filled in when vendored)."""
_CHILD_SRC = ""
"""The judge's child: judge/wire.py then judge/child.py (filled in when vendored)."""
_JUDGE_SRC = ""
"""The judge process: judge/wire.py, remote.py and main.py (filled in when vendored)."""

Channel = Any
"""The toolkit's channel type, for annotations only."""

_PRUNED = frozenset(
    {".git", ".hg", ".svn", ".endstate", "__pycache__", ".pytest_cache", ".mypy_cache",
     ".ruff_cache", ".venv", "node_modules"}
)  # fmt: skip
_CHILD_TREE_PREFIX = ".endstate-judge-"
_STDERR_CAP = 1 << 20


def runner_source() -> str:
    """The tests_pass runner's source text (embedded in this module)."""
    return _RUNNER_SRC


def child_source() -> str:
    """What the judge's child runs (embedded in this module)."""
    return _CHILD_SRC


def judge_argv(config_json: str) -> list[str]:
    """The judge process: this interpreter, running the embedded judge source."""
    return [sys.executable, "-s", "-B", "-c", _JUDGE_SRC, config_json]


JudgeProcess = Any
"""The judge's process: always a fresh one here (no warm interpreter in a vendored copy)."""


def _start_judge(config_json: str, trusted: Path, report_w: int, control: int,
                 hash_seed: str = "0") -> Any:
    """The judge as a fresh process: a vendored copy has no warm interpreter to fork from.
    Its stdin and stdout are ``control``, where it says it is ready and takes the channel.
    ``hash_seed``: the sandbox's (endstate 0.3.0's sandboxes have none: 0, as §4 says)."""
    return subprocess.Popen(
        judge_argv(config_json),
        cwd=trusted,
        stdin=control,
        stdout=control,
        stderr=subprocess.DEVNULL,
        pass_fds=(report_w,),
        env=judge_env(hash_seed),
        start_new_session=True,
    )


def remove_tree(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)


class pyast:  # stands in for the harness module the structure grader parses with
    """The harness's thread-safe ``ast.parse``: here the unittest grader's own retrying one."""

    @staticmethod
    def parse(source: str | bytes, filename: str = "<unknown>") -> ast.Module:
        return _parse(source if isinstance(source, str) else source.decode("utf-8"))


@contextlib.contextmanager
def defer_signals() -> Iterator[None]:  # stands in for the harness's, which the grader calls
    """The harness's section in which SIGINT and SIGTERM wait, so that a process is started
    and recorded as one step. Under plain endstate that signal handling is not there: a
    Ctrl-C is raised where it lands, as everywhere in endstate's own code, and nothing is
    held back here."""
    yield


class watchdog:  # stands in for the harness module the judge's grader calls
    """The harness's SIGKILL watcher, with which the judge registers its folder. It only acts
    in a process that a cluster engine may kill (a Ray unit); under plain endstate nothing
    starts one, so registering is a no-op here too."""

    @staticmethod
    def protect(folder: Path) -> None:
        pass

    @staticmethod
    def release(folder: Path) -> None:
        pass


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

    The vendored ``endstate_harness.graders:judged_tests``: the same arguments and checks.
    How it runs under endstate 0.3.0, and its limits there, are in this module's docstring.
    """
    args: dict[str, Any] = {
        "start_dir": start_dir, "pattern": pattern, "top_level_dir": top_level_dir,
        "modules": modules, "visible": visible, "child_helpers": child_helpers,
        "timeout_s": timeout_s, "min_tests": min_tests, "name": name, "python": python,
    }  # fmt: skip
    if callable(getattr(sandbox, "open_channel", None)) and callable(
        getattr(sandbox, "holdout_files", None)
    ):
        return cast(Verdict, judge_verdict(cast(Any, sandbox), **args))
    portable = _EndstateSandbox.of(sandbox)
    if portable is None:
        return _in_process(sandbox, args)
    with portable:
        return cast(Verdict, judge_verdict(cast(Any, portable), **args))


def _in_process(sandbox: Sandbox, args: dict[str, Any]) -> Verdict:
    """No way to start a separate process in this sandbox: tests_pass, and a loud check."""
    label = args["name"] or f"judge {str(args['start_dir']).rstrip('/')}/"
    verdict = tests_pass(
        cast(Any, sandbox), start_dir=args["start_dir"], pattern=args["pattern"],
        top_level_dir=args["top_level_dir"], timeout_s=args["timeout_s"],
        min_tests=args["min_tests"], name=label, python=args["python"],
    )  # fmt: skip
    warning = Check(
        name=f"{label}: verdict decided in-process",
        passed=True,
        detail=(
            f"{type(sandbox).__name__} is neither endstate's LocalSandbox or DockerSandbox nor "
            "endstate-author's: the tests ran in the same process as the code under test "
            "(tests_pass), not in a judge of their own"
        ),
    )
    return Verdict.from_checks([warning, *verdict.checks])


def _is(sandbox: object, class_name: str) -> bool:
    return any(
        c.__name__ == class_name and c.__module__ == "endstate.evals.sandbox"
        for c in type(sandbox).__mro__
    )


def _confined(root: Path, rel: str) -> Path | None:
    """``root/rel`` when no link on the way leaves ``root``; None otherwise."""
    path = root / rel
    base = os.path.realpath(root)
    parent = os.path.realpath(path.parent)
    if parent != base and not parent.startswith(base + os.sep):
        return None
    return path


def _read_tree(root: Path) -> dict[str, bytes]:
    """Every regular file below ``root`` (links and pruned names skipped), by relative path."""
    out: dict[str, bytes] = {}
    if root.is_symlink() or not root.is_dir():
        return out
    for folder, dirs, files in os.walk(root, followlinks=False):
        dirs[:] = sorted(d for d in dirs if d not in _PRUNED)
        for filename in sorted(files):
            path = Path(folder) / filename
            if filename in _PRUNED or path.is_symlink() or not path.is_file():
                continue
            out[path.relative_to(root).as_posix()] = path.read_bytes()
    return out


def _with_alarm(argv: list[str], timeout_s: float) -> list[str]:
    """The child's ``-c`` source, preceded by an alarm that ends it after ``timeout_s``."""
    out = list(argv)
    if "-c" in out[:-1]:
        at = out.index("-c") + 1
        prelude = f"import signal as _a\n_a.alarm({int(timeout_s) + 1})\ndel _a\n"
        out[at] = prelude + out[at]
    return out


class _EndstateSandbox:
    """endstate 0.3.0's LocalSandbox or DockerSandbox, with the methods the judge calls."""

    def __init__(self, sandbox: Any, container: str | None, container_workdir: str) -> None:
        self.sandbox = sandbox
        self.fixture = Path(sandbox.fixture)
        self.holdout = self.fixture.parent / "holdout"
        self.live = Path(sandbox.workdir)
        self.container = container
        self.container_workdir = container_workdir
        self._fixture_files: dict[str, bytes] | None = None
        self._holdout_files: dict[str, bytes] | None = None
        self._hidden: dict[str, bytes] = {}
        self._scratch: list[Path] = []

    @classmethod
    def of(cls, sandbox: Sandbox) -> _EndstateSandbox | None:
        if _is(sandbox, "DockerSandbox"):
            container = getattr(sandbox, "container_id", None)
            if not container:
                raise SandboxError("the Docker sandbox is not started")
            return cls(sandbox, str(container), str(getattr(sandbox, "container_workdir", "/work")))
        if _is(sandbox, "LocalSandbox"):
            return cls(sandbox, None, "")
        return None

    # --- what the judge reads -------------------------------------------------------------

    def fixture_files(self) -> dict[str, bytes]:
        if self._fixture_files is None:
            self._fixture_files = _read_tree(self.fixture)
        return dict(self._fixture_files)

    def holdout_files(self) -> dict[str, bytes]:
        if self._holdout_files is None:
            self._holdout_files = _read_tree(self.holdout)
        return dict(self._holdout_files)

    def end_state_files(self) -> dict[str, str]:
        return dict(self.sandbox.end_state_files())

    # --- the holdout out of the live tree while the child runs ----------------------------

    def __enter__(self) -> _EndstateSandbox:
        sealed = self.end_state_files()
        for rel in self.holdout_files():
            target = _confined(self.live, rel)
            if target is None or target.is_symlink() or not target.is_file():
                continue
            self._hidden[rel] = target.read_bytes()
            if rel in sealed:
                target.write_bytes(sealed[rel].encode("utf-8"))
            else:
                target.unlink()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        for folder in self._scratch:
            remove_tree(folder)
        self._scratch.clear()
        for rel, data in self._hidden.items():
            target = _confined(self.live, rel)
            if target is None:
                continue
            if target.is_symlink():
                target.unlink()
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        self._hidden.clear()

    # --- the child ------------------------------------------------------------------------

    def _child_tree(self, tree: Path) -> None:
        """Write the sealed end state, without the holdout, into ``tree``."""
        holdout = self.holdout_files()
        for rel, text in self.end_state_files().items():
            if rel.startswith(_CHILD_TREE_PREFIX):
                continue
            data = text.encode("utf-8")
            live = _confined(self.live, rel)
            try:
                if live is not None and not live.is_symlink() and live.is_file():
                    raw = live.read_bytes()
                    if raw.decode("utf-8", errors="replace") == text:
                        data = raw
            except OSError:
                pass
            if holdout.get(rel) == data:
                continue
            target = tree / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)

    def open_channel(self, argv: list[str], *, timeout_s: float) -> _ProcessChannel:
        argv = _with_alarm(argv, timeout_s)
        if self.container is not None:
            folder = _CHILD_TREE_PREFIX + secrets.token_hex(8)
            tree = self.live / folder
            self._scratch.append(tree)
            tree.mkdir()
            self._child_tree(tree)
            inside = self.container_workdir.rstrip("/") + "/" + folder
            full = ["docker", "exec", "-i", "--workdir", inside, self.container, *argv]
            cwd: Path | None = None
            env = dict(os.environ)
        else:
            scratch = Path(tempfile.mkdtemp(prefix="endstate-judge-child-"))
            self._scratch.append(scratch)
            tree, home = scratch / "tree", scratch / "home"
            tree.mkdir()
            home.mkdir()
            self._child_tree(tree)
            full, cwd = argv, tree
            env = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL", "TZ")}
            env.update(HOME=str(home), TMPDIR=str(home), PYTHONHASHSEED="0",
                       PYTHONDONTWRITEBYTECODE="1")  # fmt: skip
        try:
            proc = subprocess.Popen(
                full,
                cwd=cwd,
                env=env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
        except OSError as exc:
            raise SandboxError(f"cannot start the judge's child ({full[0]}): {exc}") from exc
        return _ProcessChannel(proc, timeout_s)


class _ProcessChannel:
    """A process talked to over its stdin and stdout; stopped with its whole group."""

    def __init__(self, proc: subprocess.Popen[bytes], limit: float) -> None:
        self.proc = proc
        self._err = bytearray()
        self._timer = threading.Timer(limit, self._kill)
        self._timer.daemon = True
        self._timer.start()
        self._err_thread = threading.Thread(target=self._drain, daemon=True)
        self._err_thread.start()

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        fd = self.proc.stderr.fileno()
        while True:
            try:
                data = os.read(fd, 1 << 16)
            except OSError:
                return
            if not data:
                return
            self._err += data
            del self._err[:-_STDERR_CAP]

    def _kill(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except OSError:
            pass

    def send(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(data)
            self.proc.stdin.flush()
        except ValueError as exc:  # closed
            raise OSError(str(exc)) from exc

    def close_input(self) -> None:
        if self.proc.stdin is not None:
            try:
                self.proc.stdin.close()
            except OSError:
                pass

    def direct(self) -> tuple[int, int] | None:
        """The process's own pipes, for the judge to use with no relay (a local process)."""
        if self.proc.stdout is None or self.proc.stdin is None:
            return None
        return self.proc.stdout.fileno(), self.proc.stdin.fileno()

    def chunks(self) -> Iterator[bytes]:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        while True:
            try:
                data = os.read(fd, 1 << 16)
            except (OSError, ValueError):
                return
            if not data:
                return
            yield data

    def stderr_text(self) -> str:
        return bytes(self._err).decode("utf-8", errors="replace")

    def close(self) -> None:
        self._timer.cancel()
        self._kill()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            pass
        self._err_thread.join(timeout=5)
        for pipe in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if pipe is not None:
                try:
                    pipe.close()
                except OSError:
                    pass
