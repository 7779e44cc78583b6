"""The ``endstate-author`` command line: one module per command group.

``endstate_author.cli:run`` is the console script (``main``, then a quick exit); ``app``,
``OutputFormat`` and ``emit`` are loaded on first use, so lint's fast path pays for none of them.
"""

from __future__ import annotations

import atexit
import importlib
import os
import sys
import threading
from typing import TYPE_CHECKING, Any

import endstate_author.interrupts as interrupts
from endstate_harness.process.cleanup import defer_signals

if TYPE_CHECKING:
    from endstate_author.cli.app import app
    from endstate_author.cli.output import OutputFormat, emit

__all__ = ["OutputFormat", "app", "emit", "main", "run"]

_LAZY = {"app": "endstate_author.cli.app", "OutputFormat": "endstate_author.cli.output",
         "emit": "endstate_author.cli.output"}  # fmt: skip


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        # importing the submodule ``cli.app`` bound the package's ``app`` to that module;
        # the name this package re-exports is the typer app in it
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main() -> None:
    """Entry point: lint's cached fast path when it can answer, prove's typer-free one
    (:mod:`endstate_author.cli.prove_command`) for a command line it reads, else the typer
    app."""
    if sys.argv[1:2] == ["lint"] or sys.argv[1:3] == ["hook", "lint"]:
        try:
            # deferred: only ``lint`` has a fast path, and it must not import the app
            from endstate_author.lint import fast as lintfast

            if sys.argv[1] == "hook":
                status = lintfast.hook_main(sys.argv[2:])
            else:
                status = lintfast.main(sys.argv[1:])
        except KeyboardInterrupt:
            sys.stderr.write("endstate-author: interrupted\n")
            sys.exit(130)
        if status is not None:
            sys.exit(status)
    interrupts.install()  # before the deferred section below: what it defers is delivered here
    try:
        # Signals wait until the imports are done (~0.3 s): a KeyboardInterrupt raised inside
        # one can come out as another error (pydantic-core turns it into a SchemaError while
        # it builds a model), a traceback instead of a clean exit. prove's early start is
        # inside too (a Ctrl-C during its own imports was a traceback); what it started is
        # swept by the exit handlers, so the signal is then acted on as it would have been.
        with defer_signals():
            # The temporary folder is found by writing and removing a test file in it, once per
            # process; a Ctrl-C between the two, in whatever first asks, leaves that file.
            import tempfile  # deferred, as below: lint's fast path never needs it

            tempfile.gettempdir()
            fast = None
            if sys.argv[1:2] == ["prove"]:
                # deferred: prove's early start (its warm interpreters begin while prove imports)
                from endstate_author.cli import prove_early

                prove_early.start(sys.argv[2:])
                # deferred: prove without typer, for a command line it reads for sure
                from endstate_author.cli import prove_command

                if (sys.stdout.encoding or "").lower().replace("-", "") == "utf8":
                    fast = prove_command.parse(sys.argv[1:])
            if fast is None:
                # deferred: typer and every command's module, which the fast paths never need
                __getattr__("app")
                from endstate_author.cli.app import main as app_main  # deferred, as above
    except KeyboardInterrupt:
        raise SystemExit(130) from None
    if fast is not None:
        prove_command.main(fast)
    app_main()


def run() -> None:
    """The console script and ``python -m endstate_author``: :func:`main`, then an exit that
    does not tear the interpreter down.

    Why: once the command is done and its exit handlers have run (every sandbox, container,
    zygote and temporary folder is gone by then: they are swept in ``atexit``), what is left is
    freeing a few hundred modules and their objects one by one, 70-100 ms of a 0.5 s
    ``prove``, more after linting a thousand tasks, for memory the process is about to return
    anyway. So: the exit handlers, a flush of stdout and stderr, then ``os._exit``. The
    ordinary exit is kept whenever it does more than that: another non-daemon thread still
    running (it would be waited for), or a status that is not a number. :func:`main` itself
    exits the ordinary way, so calling it in-process (tests) never ends the caller.
    """
    try:
        main()
        code: object = 0
    except SystemExit as exc:
        code = exc.code
    if code is None:
        code = 0
    busy = [
        t for t in threading.enumerate()
        if t is not threading.main_thread() and not t.daemon and t.is_alive()
    ]  # fmt: skip
    if not isinstance(code, int) or busy:
        raise SystemExit(code)
    threading.excepthook = _quiet_daemons
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass  # a reader that went away (`| head`): nothing left to tell it
    os._exit(code)


def _quiet_daemons(args: threading.ExceptHookArgs) -> None:
    """While the exit handlers run: a daemon thread that fails because they closed what it
    was reading (a container's stream, a zygote's pipe) says nothing about the command, which
    has finished; only a non-daemon thread's failure is still reported."""
    if args.thread is not None and args.thread.daemon:
        return
    threading.__excepthook__(args)
