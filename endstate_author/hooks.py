"""``python -m endstate_author.hooks``: the stable module path of the git hook.

``.pre-commit-hooks.yaml`` (and any hook configuration pinned to an older revision) runs
this module (isolated, ``python -I -m``: pre-commit starts it in the repository being
committed, whose own ``endstate_author/`` must never be imported in its place), and the
editor extensions name :func:`task_of` by this path; the mapping lives in
:mod:`endstate_author.changed`, the command in :mod:`endstate_author.cli.cmd_hook`.
"""

import sys

from endstate_author.changed import TASK_DIRS, TASK_FILES, task_of, tasks_for_files
from endstate_author.lint import fast

__all__ = ["TASK_DIRS", "TASK_FILES", "main", "task_of", "tasks_for_files"]


def main() -> None:
    """``hook lint`` through lint's fast path when it can answer, else the typer command."""
    if sys.argv[1:2] == ["lint"]:
        try:
            status = fast.hook_main(sys.argv[1:])
        except KeyboardInterrupt:
            sys.stderr.write("endstate-author: interrupted\n")
            sys.exit(130)
        if status is not None:
            sys.exit(status)
    # deferred: typer and the hook command, only when the fast path cannot answer
    from endstate_author.cli.cmd_hook import main as hook_main

    hook_main()


if __name__ == "__main__":
    main()
