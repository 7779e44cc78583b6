"""What a task's test command runs: the runner, its folders, its pattern, its test files, read
statically; anything it cannot read exactly is ``unknown``. Import from the package itself.
"""

from __future__ import annotations

from endstate_author.engine.discovery.command import (
    DEFAULT_PATTERN,
    Runner,
    TestCommand,
    from_tests_pass,
    parse_command,
    unknown,
)
from endstate_author.engine.discovery.files import (
    is_test_file_name,
    missing_module_targets,
    test_files,
)
from endstate_author.engine.discovery.grader_names import (
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
