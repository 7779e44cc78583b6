"""Editor analysis: everything the language server answers, as plain functions and dataclasses.

The language server (``endstate_lsp``) only translates between the protocol and this package,
so the CLI and the editor share one source of truth and every answer here is tested without
a client (``tests/editor/``). Functions take a task folder, the document's bytes (an unsaved
buffer, often half-typed and invalid) and a byte offset, and return small dataclasses with
*byte* ranges; the server converts those to UTF-16 positions. Nothing here imports lsprotocol
or pygls.

One module per editor feature, with the shared pieces beside them:

- ``completion.py``: what may be typed at the cursor (keys, enums, grader names, args, paths);
- ``hover.py``: what the thing under the cursor means;
- ``links.py``: go-to-definition and document links (grader ``def``s, fixture files);
- ``outline.py``: document symbols;
- ``actions.py``: quick fixes, fix-all, "add the missing mandatory assertions";
- ``cursor.py``: which JSON path and token a byte offset is at, in half-typed JSON;
- ``graders.py``: grader signatures from the static catalogue;
- ``paths.py``: the fixture's files, what a path argument points at, a file's task folder;
- ``vocabulary.py``: the texts shown for keys, categories and stop reasons.

Nothing here imports or runs suite code: graders are looked up statically through the
catalogue, paths come from listing the fixture. Every function tolerates any input (empty,
binary, huge, invalid JSON) and answers "nothing" rather than raising, because an editor
asks these questions on every keystroke.

This ``__init__`` only re-exports the public names, so ``from endstate_author.assist import
complete`` keeps working; the submodules never import it.
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
    "short_name",
    "task_root_of",
    "utf16_column",
]
