"""Editor analysis: everything the language server answers, as plain functions and dataclasses
with byte ranges, free of the protocol (nothing here imports lsprotocol or pygls). This
``__init__`` only re-exports the public names.
"""

from __future__ import annotations

from endstate_author.assist.actions import (
    Action,
    fix_all,
    fix_for,
    mandatory_assertions,
    quick_fixes,
)
from endstate_author.assist.completion import CompletionItem, CompletionKind, complete
from endstate_author.assist.cursor import (
    ContextKind,
    CursorContext,
    JsonPath,
    arg_of,
    cursor_context,
    utf16_column,
)
from endstate_author.assist.grader_views import (
    HARNESS_MODULE,
    REFERENCE_MODULE,
    Graders,
    GraderView,
    ParamView,
    short_name,
)
from endstate_author.assist.hover import HoverInfo, hover
from endstate_author.assist.links import DocumentLink, Location, definition, document_links
from endstate_author.assist.outline import Symbol, document_symbols
from endstate_author.assist.paths import fixture_paths, path_target, task_root_of
from endstate_author.assist.ready_test import ready_tests
from endstate_author.assist.vocabulary import (
    CATEGORY_TEXT,
    MAX_DOCUMENT_BYTES,
    PATH_ARGS,
    STOP_REASON_TEXT,
    model_fields,
)

__all__ = [
    "CATEGORY_TEXT",
    "HARNESS_MODULE",
    "MAX_DOCUMENT_BYTES",
    "PATH_ARGS",
    "REFERENCE_MODULE",
    "STOP_REASON_TEXT",
    "Action",
    "CompletionItem",
    "CompletionKind",
    "ContextKind",
    "CursorContext",
    "DocumentLink",
    "GraderView",
    "Graders",
    "HoverInfo",
    "JsonPath",
    "Location",
    "ParamView",
    "Symbol",
    "arg_of",
    "complete",
    "cursor_context",
    "definition",
    "document_links",
    "document_symbols",
    "fix_all",
    "fix_for",
    "fixture_paths",
    "hover",
    "mandatory_assertions",
    "model_fields",
    "path_target",
    "quick_fixes",
    "ready_tests",
    "short_name",
    "task_root_of",
    "utf16_column",
]
