"""What a task's test command runs: the runner, its folders, its pattern, its test files.

Several rules need to know which files a grader's test command executes: ES302/ES310 (are the
test files pinned?), ES406 (does a discovered tests folder have its ``__init__.py``?) and
ES507 (does the folder the command names exist?). This package reads the command the way the
shell and the runner would, statically, and answers with a :class:`TestCommand`.

It deliberately recognises only what it can read exactly: ``python -m unittest`` (discovery
or named modules), ``python -m pytest`` / ``pytest``, optionally behind ``cd DIR &&`` and
``VAR=value`` prefixes, and the project's ``tests_pass`` grader. Anything else (``make
test``, ``sh run_tests.sh``, a pipe, ``|| true``) is ``unknown``, and the rules that depend on
the answer stay silent: a guessed runner that fires on a sound task is worse than a miss.

All folders in a :class:`TestCommand` are normalised forward-slash paths relative to the
root of the tree the command runs in (the sandbox's working directory), ``"."`` for the root.

The package: :mod:`~.command` reads a command, :mod:`~.files` lists the files it runs,
:mod:`~.graders` says which graders run a command. Import from the package itself.
"""

from __future__ import annotations

from endstate_author.discovery.command import (
    DEFAULT_PATTERN,
    Runner,
    TestCommand,
    from_tests_pass,
    parse_command,
    unknown,
)
from endstate_author.discovery.files import (
    is_test_file_name,
    missing_module_targets,
    test_files,
)
from endstate_author.discovery.grader_names import (
    HARNESS_MODULE,
    HARNESS_NAMES,
    REFERENCE_MODULE,
    REFERENCE_NAMES,
    TEST_GRADERS,
    builtin_name,
    grader_command,
    split_grader,
)

__all__ = [
    "DEFAULT_PATTERN",
    "HARNESS_MODULE",
    "HARNESS_NAMES",
    "REFERENCE_MODULE",
    "REFERENCE_NAMES",
    "TEST_GRADERS",
    "Runner",
    "TestCommand",
    "builtin_name",
    "from_tests_pass",
    "grader_command",
    "is_test_file_name",
    "missing_module_targets",
    "parse_command",
    "split_grader",
    "test_files",
    "unknown",
]
