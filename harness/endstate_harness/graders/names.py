"""The grader library's register: one :class:`GraderRecord` per grader a task can name.

Every other table about graders is derived from :data:`GRADERS`: the resolver's, the reference
set, which graders read only the sealed state, which run tests, which are vendored and the
modules their copy needs, the paths lint checks exist (ES506), lint's catalogue, discovery,
the package's lazy names and the docs page of the library. So a new grader is its module, its
record here, its tests (CONTRIBUTING.md, "Adding a grader"; ``tests/test_contributing_grader.py``
follows that recipe in a copy of the repository).

This module imports no grader, and nothing outside the standard library: lint, discovery and
the rules read it at start-up, and the graders' own modules are loaded only when a grader runs
(:meth:`GraderRecord.load`).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, Literal, NamedTuple

THIS_MODULE = "endstate_harness.graders"
"""What a task names this library by: ``endstate_harness.graders:<name>``."""
REFERENCE_MODULE = "endstate.evals.graders"
"""endstate 0.3.0's reference library (task-format.md §3), aliased to ours."""
REFERENCE_SOURCE = "endstate_harness.graders.reference"
"""The module that defines the reference graders: ``endstate.evals.graders`` is aliased to it
as a whole (a suite module's ``from endstate.evals.graders import …`` reads it), so a reference
grader must be defined there."""

RunsTests = Literal["", "command", "unittest"]


class PathArgument(NamedTuple):
    """The argument through which a grader reads files of the end state by path, for ES506 (a
    path in neither fixture/ nor solution/ reads as "" and makes the check vacuous)."""

    name: str
    """The argument's name (``path``, ``paths``)."""
    many: bool = False
    """A list of paths rather than one path."""
    folders: bool = False
    """A folder counts as there (``paths_exist``); otherwise only a file does."""


class GraderRecord(NamedTuple):
    """Everything the toolkit needs to know about one grader, apart from its code.

    A named tuple rather than a dataclass: lint imports this module at start-up, and a named
    tuple's class is made in a fraction of the time. :func:`check` says what is wrong with one.

    Its signature and docstring are the function's own: lint's catalogue reads them from the
    module's source with :mod:`ast`, the resolver with :func:`inspect.signature`, and a test
    holds the two to each other. ``from __future__ import annotations`` in a grader module is
    fine: the catalogue reads annotations as text either way, and what reads them at run time
    evaluates them (``inspect.signature(..., eval_str=True)``).
    """

    name: str
    """Its short name: ``endstate_harness.graders:<name>`` in a task."""
    module: str
    """The module that defines it, below ``endstate_harness.graders``."""
    reference: bool = False
    """endstate 0.3.0 has it too, as ``endstate.evals.graders:<name>``: it is defined in
    :data:`REFERENCE_SOURCE` and must behave exactly as endstate's does."""
    sealed_only: bool = False
    """It reads nothing but the sealed end state and the pristine fixture and starts no
    process: its verdict is the same whenever it runs, so prove asks it first."""
    runs_tests: RunsTests = ""
    """How it runs the task's tests: ``"command"`` (a shell command in its ``command``
    argument), ``"unittest"`` (unittest discovery from ``start_dir``/``pattern``/
    ``top_level_dir``, in the interpreter its ``python`` argument names), or not at all."""
    vendor_with: tuple[str, ...] | None = None
    """None when ``endstate-author vendor`` does not copy it; otherwise the harness modules
    its vendored copy needs besides its own module (written before it). A vendored module may
    import only the standard library and the harness."""
    reads_paths: PathArgument | None = None
    """The argument naming the files it reads, when a missing one makes it vacuous (ES506)."""
    example: Mapping[str, Any] = MappingProxyType({})
    """The least ``args`` it accepts: the resolver's tests and the docs page use them."""

    def load(self) -> Callable[..., Any]:
        """The grader function (importing its module: only what runs a grader calls this).

        Raises:
            ImportError, AttributeError: the record names a module or function that is not
                there (a test holds every record to its module).
        """
        return getattr(importlib.import_module(self.module), self.name)  # type: ignore[no-any-return]


def check(record: GraderRecord) -> None:
    """Refuse a record that cannot be right, saying why (every record is checked when this
    module is imported).

    Raises:
        ValueError: the record contradicts itself or the library's layout.
    """
    if not record.name.isidentifier():
        raise ValueError(f"grader record {record.name!r}: the name is not a Python identifier")
    if not record.module.startswith(THIS_MODULE + "."):
        raise ValueError(f"grader record {record.name!r}: its module {record.module!r} is not "
                         f"below {THIS_MODULE}")
    if record.reference and record.module != REFERENCE_SOURCE:
        raise ValueError(f"grader record {record.name!r}: a reference grader is defined in "
                         f"{REFERENCE_SOURCE}, not {record.module!r}")
    if record.reference and record.vendor_with is not None:
        raise ValueError(f"grader record {record.name!r}: endstate has the reference graders; "
                         "only this toolkit's own are vendored")
    if record.runs_tests not in ("", "command", "unittest"):
        raise ValueError(f"grader record {record.name!r}: runs_tests is "
                         f"{record.runs_tests!r}, not '', 'command' or 'unittest'")
    if record.sealed_only and record.runs_tests:
        raise ValueError(f"grader record {record.name!r}: a grader that runs tests does not "
                         "read only the sealed state")


_UNITTEST = "endstate_harness.graders.unittest_grader"
_JUDGE = "endstate_harness.graders.judge.grader"
_STRUCTURE = "endstate_harness.graders.structure"

GRADERS: tuple[GraderRecord, ...] = (
    GraderRecord("command_succeeds", REFERENCE_SOURCE, reference=True, runs_tests="command",
                 example={"command": "true"}),
    GraderRecord("files_unchanged", REFERENCE_SOURCE, reference=True, sealed_only=True,
                 example={"paths": []}),
    GraderRecord("paths_exist", REFERENCE_SOURCE, reference=True, sealed_only=True,
                 reads_paths=PathArgument("paths", many=True, folders=True),
                 example={"paths": []}),
    GraderRecord("paths_absent", REFERENCE_SOURCE, reference=True, sealed_only=True,
                 example={"paths": []}),
    GraderRecord("file_matches", REFERENCE_SOURCE, reference=True, sealed_only=True,
                 reads_paths=PathArgument("path"), example={"path": "a", "pattern": "x"}),
    GraderRecord("file_contains", REFERENCE_SOURCE, reference=True, sealed_only=True,
                 reads_paths=PathArgument("path"), example={"path": "a", "text": "x"}),
    GraderRecord("pattern_count", REFERENCE_SOURCE, reference=True, sealed_only=True,
                 reads_paths=PathArgument("paths", many=True), example={"pattern": "x"}),
    GraderRecord("no_new_skips", REFERENCE_SOURCE, reference=True, sealed_only=True),
    GraderRecord("tree_unchanged", REFERENCE_SOURCE, reference=True, sealed_only=True),
    GraderRecord("changed_paths_within", REFERENCE_SOURCE, reference=True, sealed_only=True,
                 example={"allowed": []}),
    GraderRecord("tests_pass", _UNITTEST, runs_tests="unittest", vendor_with=()),
    GraderRecord("judged_tests", _JUDGE, runs_tests="unittest",
                 vendor_with=("endstate_harness.graders.judge.evidence",
                              "endstate_harness.graders.judge.launch")),
    GraderRecord("delegates_to", _STRUCTURE, sealed_only=True,
                 vendor_with=("endstate_harness.graders.pysource",
                              "endstate_harness.graders.codeshape"),
                 reads_paths=PathArgument("path"),
                 example={"path": "a.py", "functions": ["f"], "to": "g"}),
)
"""One record per grader of ``endstate_harness.graders``, in the order the docs list them."""


def _registered(records: tuple[GraderRecord, ...]) -> dict[str, GraderRecord]:
    by_name: dict[str, GraderRecord] = {}
    for record in records:
        check(record)
        if by_name.setdefault(record.name, record) is not record:
            raise ValueError(f"two grader records are named {record.name!r}")
    return by_name


RECORDS: Mapping[str, GraderRecord] = _registered(GRADERS)
""":data:`GRADERS` by short name."""

# ----- the tables derived from the records ----------------------------------------------------

LIBRARY: dict[str, str] = {r.name: r.module for r in GRADERS}
"""Every grader of ``endstate_harness.graders``, by short name: the module that defines it."""
REFERENCE_NAMES = frozenset(r.name for r in GRADERS if r.reference)
"""The graders ``endstate.evals.graders`` offers too (the rest are this toolkit's own)."""
SEALED_ONLY = frozenset(r.name for r in GRADERS if r.sealed_only)
"""The graders that read only the sealed end state and run nothing."""
TEST_GRADERS = frozenset(r.name for r in GRADERS if r.runs_tests == "unittest")
"""The graders that run unittest discovery (``start_dir``, ``pattern``, ``top_level_dir``)."""
COMMAND_GRADERS = frozenset(r.name for r in GRADERS if r.runs_tests == "command")
"""The graders that run the shell command of their ``command`` argument."""
PATH_ARGUMENTS: dict[str, PathArgument] = {
    r.name: r.reads_paths for r in GRADERS if r.reads_paths is not None
}
"""The argument naming the files each grader reads, for ES506."""
VENDORED_GRADERS = tuple(r.name for r in GRADERS if r.vendor_with is not None)
"""The graders ``endstate-author vendor`` copies into a suite (endstate 0.3.0 lacks them)."""
VENDORED_MODULES = tuple(dict.fromkeys(
    module for r in GRADERS if r.vendor_with is not None for module in (*r.vendor_with, r.module)
))
"""The modules whose text ``endstate-author vendor`` copies, statement by statement, into a
suite that plain endstate 0.3.0 grades (``endstate_vendor/graders.py``), each after those its
grader needs. Each imports only the standard library and the harness (those imports are
replaced when vendored), and a change to either reaches vendored suites the next time
``vendor`` runs; ES213 says when a copy is old."""

FORBIDDEN_PARAMETERS = frozenset(
    {
        "messages",
        "transcript",
        "history",
        "result",
        "run_result",
        "final_text",
        "response",
        "conversation",
    }
)
"""Parameter names through which a grader could be handed the agent's words (§3).

A guard against the accident — someone adding "and it said it ran the tests" because that is
easier than checking the tests ran — not against a determined author.
"""
