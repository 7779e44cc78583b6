"""The grader catalogue: what a grader name in task.json points at, found without running it.

Lint, completion and hover need a grader's signature, but a suite's grader module is code the
author has not finished (it may not import, may print, may write files, may raise at import).
So this package **never imports or executes suite code**: it finds the module's file the way
Python's path-based import would, parses it with :mod:`ast`, and reads each function's
signature off the syntax tree.

Where names are looked up (task-format.md §7, the same order the harness imports with, see
:func:`endstate_harness.graders.grader_search_paths`): the task's own folder, the suite folder,
the project root, then ``grader-paths`` from config. A module not found there may still be an
installed package (``mypkg.graders`` in site-packages); for that, only the *top-level* name is
asked of :func:`importlib.util.find_spec`, which locates a top-level module without executing it
(a dotted name would import its parent packages), and the rest of the dotted path is searched
as files below the location found.

Built-in graders (``endstate.evals.graders:<x>``, which the harness aliases to its own library,
and ``endstate_harness.graders:<x>``) come from the harness's own tables and
:func:`inspect.signature`; the ``endstate`` package is never imported, installed or not.

Parsed modules are cached by (path, mtime, size), so a suite of 1,000 tasks sharing one grader
module parses it once, and an edited module is parsed again.

The package, bottom up: :mod:`~.names` (splitting a name; the harness's library names and
tables), :mod:`~.model` (what a look-up answers), :mod:`~.library` (built-ins' signatures),
:mod:`~.cache`, :mod:`~.source` (reading a module with :mod:`ast`), :mod:`~.finder` (locating a
module's file) and :mod:`~.lookup` (the :class:`Catalogue`). Import from the package itself.
"""

from __future__ import annotations

from endstate_author.catalogue.cache import clear_cache
from endstate_author.catalogue.lookup import Catalogue
from endstate_author.catalogue.model import (
    ErrorKind,
    GraderInfo,
    ParamInfo,
    ParamKind,
    Resolution,
)
from endstate_author.catalogue.names import canonical_name, split_name
from endstate_author.catalogue.source import (
    MAX_MODULE_BYTES,
    PARSE_COUNT,
    ParsedModule,
    parse_module,
)

__all__ = [
    "MAX_MODULE_BYTES",
    "PARSE_COUNT",
    "Catalogue",
    "ErrorKind",
    "GraderInfo",
    "ParamInfo",
    "ParamKind",
    "ParsedModule",
    "Resolution",
    "canonical_name",
    "clear_cache",
    "parse_module",
    "split_name",
]
