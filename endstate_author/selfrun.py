"""How the toolkit starts a Python process of its own without importing the workspace's code.

``python -m endstate_author`` puts its working folder first on ``sys.path``. Started in a
task repository (the language server's prove-on-save runs in the suite's folder), a folder
holding its own ``endstate_author/`` package would run instead of the toolkit, on the host,
in an untrusted workspace too. So a toolkit child runs with ``-P`` (Python 3.11: no unsafe
path is prepended), and the environment it inherits keeps only absolute ``PYTHONPATH``
entries: an empty or relative entry means the working folder again.

Standalone (standard library only): the language server and the CLI both use it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping


def python_module(module: str, *args: str) -> list[str]:
    """The argv running ``module`` with this interpreter, the working folder off its path."""
    return [sys.executable, "-P", "-m", module, *args]


def child_env(base: Mapping[str, str] | None = None, **extra: str) -> dict[str, str]:
    """``base`` (this process's environment) for a toolkit child: ``PYTHONPATH`` without an
    empty or relative entry (each would name the working folder), ``PYTHONSTARTUP`` and
    ``PYTHONINSPECT`` dropped, ``extra`` added."""
    env = dict(os.environ if base is None else base)
    for name in ("PYTHONSTARTUP", "PYTHONINSPECT"):
        env.pop(name, None)
    if "PYTHONPATH" in env:
        kept = [p for p in env["PYTHONPATH"].split(os.pathsep) if os.path.isabs(p)]
        if kept:
            env["PYTHONPATH"] = os.pathsep.join(kept)
        else:
            del env["PYTHONPATH"]
    env.update(extra)
    return env
