"""``python -m endstate_author.cli_eval``: eval, run and sessions without the main CLI.

The stable module path of that standalone entry (and of ``from endstate_author.cli_eval
import app``); the code lives in :mod:`endstate_author.cli.cmd_eval`.
"""

from endstate_author.cli.cmd_eval import (
    app,
    eval_command,
    eval_exit_code,
    run_command,
    sessions_command,
)

__all__ = ["app", "eval_command", "eval_exit_code", "run_command", "sessions_command"]

if __name__ == "__main__":
    app()
