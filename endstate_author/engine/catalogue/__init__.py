"""The grader catalogue: what a grader name in task.json points at, found without running it
(suite code is never imported or executed). Import from the package itself.
"""

from __future__ import annotations

from endstate_author.engine.catalogue.cache import clear_cache
from endstate_author.engine.catalogue.lookup import Catalogue
from endstate_author.engine.catalogue.model import (
    ErrorKind,
    GraderInfo,
    ParamInfo,
    ParamKind,
    Resolution,
)
from endstate_author.engine.catalogue.names import canonical_name, split_name
from endstate_author.engine.catalogue.source import (
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
