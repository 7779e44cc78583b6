"""``python -m endstate_author.hooks``: the stable module path of the git hook.

``.pre-commit-hooks.yaml`` (and any hook configuration pinned to an older revision) runs
this module, and the editor extensions name :func:`task_of` by this path; the code lives in
:mod:`endstate_author.cli.cmd_hook`, with the other commands.
"""

from endstate_author.cli.cmd_hook import (
    TASK_DIRS,
    TASK_FILES,
    HookAction,
    hook_command,
    main,
    task_of,
    tasks_for_files,
)

__all__ = [
    "TASK_DIRS",
    "TASK_FILES",
    "HookAction",
    "hook_command",
    "main",
    "task_of",
    "tasks_for_files",
]

if __name__ == "__main__":
    main()
