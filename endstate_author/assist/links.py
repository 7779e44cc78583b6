"""Navigation from task.json: go-to-definition and document links."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from endstate_author.assist.cursor import arg_of, cursor_context
from endstate_author.assist.grader_views import Graders
from endstate_author.assist.paths import path_target
from endstate_author.assist.vocabulary import MAX_DOCUMENT_BYTES, PATH_ARGS
from endstate_author.engine.jsonpos import parse


@dataclass(frozen=True)
class Location:
    """A target in another file: 1-based line/column (characters) as the catalogue gives them."""

    file: Path
    line: int = 1
    column: int = 1


def definition(
    root: Path, data: bytes, offset: int, *, graders: Graders | None = None
) -> Location | None:
    """A grader name → its ``def``; a path argument → the fixture (or solution) file."""
    if len(data) > MAX_DOCUMENT_BYTES:
        return None
    ctx = cursor_context(data, offset, hover=True)
    if ctx.kind != "value" or ctx.text is None:
        return None
    path = ctx.path
    if len(path) == 3 and path[0] == "graders" and path[2] == "name":
        view = (graders or Graders(None)).resolve(ctx.text)
        if view is None or view.file is None:
            return None
        return Location(view.file, view.line, view.column)
    arg = arg_of(path)
    if arg in PATH_ARGS:
        target = path_target(root, ctx.text)
        return Location(target) if target else None
    return None


@dataclass(frozen=True)
class DocumentLink:
    start: int
    end: int
    target: Path
    tooltip: str


def document_links(root: Path, data: bytes) -> list[DocumentLink]:
    """Every path argument that names an existing file, linked to it."""
    if len(data) > MAX_DOCUMENT_BYTES:
        return []
    doc = parse(data)
    graders = doc.node_at_path(("graders",))
    links: list[DocumentLink] = []
    if graders is None or graders.kind != "array":
        return links
    for entry in graders.items:
        args = entry.get("args") if entry.kind == "object" else None
        if args is None or args.kind != "object":
            continue
        for pair in args.pairs:
            if pair.key not in PATH_ARGS or pair.value is None:
                continue
            nodes = pair.value.items if pair.value.kind == "array" else [pair.value]
            for node in nodes:
                if node.kind != "string" or not isinstance(node.value, str):
                    continue
                target = path_target(root, node.value)
                if target is not None and target.is_file():
                    tree = target.relative_to(root).parts[0]
                    links.append(
                        DocumentLink(
                            node.start + 1, node.end - 1, target, f"open {tree}/{node.value}"
                        )
                    )
    return links
