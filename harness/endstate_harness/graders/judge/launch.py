"""How the judge and its child are started: their commands and the judge's environment.

Apart from :mod:`endstate_harness.graders.judge.grader` (which imports the verdict's models)
so that a command can start the judge's warm interpreters before it has imported anything
heavy (``prove``'s early start, :mod:`endstate_harness.graders.judge.prestart`). Vendored with
the grader (``VENDORED_MODULES``): standard library and :mod:`endstate_harness.inside` only.
"""

from __future__ import annotations

import os
import sys

from endstate_harness import inside

JUDGE_MODULE = "endstate_harness.graders.judge.main"
"""The judge process's module (``python -m``), and the key of its warm interpreter."""


def child_command(python: str) -> list[str]:
    """The argv of the judge's child in the sandbox (the code under test runs in it)."""
    return [python, "-s", "-S", "-B", "-c", child_source()]


def judge_argv(config_json: str) -> list[str]:
    """How the judge process is started (on the host, with this interpreter)."""
    return [sys.executable, "-s", "-B", "-m", JUDGE_MODULE, config_json]


def judge_env() -> dict[str, str]:
    """The judge's environment: the host's few variables it needs, a fixed hash seed."""
    keep = ("PATH", "LANG", "LC_ALL", "TZ", "SYSTEMROOT", "VIRTUAL_ENV")
    env = {k: v for k, v in os.environ.items() if k in keep}
    env.update(PYTHONHASHSEED="0", PYTHONDONTWRITEBYTECODE="1", PYTHONIOENCODING="utf-8")
    return env


def child_source() -> str:
    """What the child runs: the wire format, then the server (both shipped as source)."""
    return inside.program("judge_child")
