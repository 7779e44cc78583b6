"""The outline of task.json (document symbols): its keys, each grader with its arguments,
each ``requires`` bound.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

from endstate_author.assist.grader_views import short_name
from endstate_author.assist.vocabulary import MAX_DOCUMENT_BYTES
from endstate_author.engine.jsonpos import parse


@dataclass
class Symbol:
    name: str
    detail: str
    kind: Literal["array", "object", "function", "property", "number", "string"]
    start: int
    end: int
    select_start: int
    select_end: int
    children: list[Symbol] = field(default_factory=list)


def document_symbols(data: bytes) -> list[Symbol]:
    """Outline: the graders (with their args) and the requires bounds, then the other keys."""
    if len(data) > MAX_DOCUMENT_BYTES:
        return []
    doc = parse(data)
    root = doc.root
    if root is None or root.kind != "object":
        return []
    out: list[Symbol] = []
    for pair in root.pairs:
        value = pair.value
        end = value.end if value else pair.end
        sym = Symbol(
            pair.key,
            "",
            "property",
            pair.start,
            max(end, pair.key_node.end),
            pair.key_node.start,
            pair.key_node.end,
        )
        if pair.key == "graders" and value is not None and value.kind == "array":
            sym.kind = "array"
            sym.detail = f"{len(value.items)} graders"
            for i, item in enumerate(value.items):
                name_node = item.get("name") if item.kind == "object" else None
                name = (
                    name_node.value
                    if name_node is not None and isinstance(name_node.value, str)
                    else f"[{i}]"
                )
                args = item.get("args") if item.kind == "object" else None
                sel = name_node or item
                child = Symbol(
                    short_name(name), name, "function", item.start, item.end, sel.start, sel.end
                )
                if args is not None and args.kind == "object":
                    for ap in args.pairs:
                        v = ap.value
                        child.children.append(
                            Symbol(
                                ap.key,
                                _short_json(v.to_python() if v else None),
                                "property",
                                ap.start,
                                max(ap.end, v.end if v else ap.end),
                                ap.key_node.start,
                                ap.key_node.end,
                            )
                        )
                sym.children.append(child)
        elif pair.key == "requires" and value is not None and value.kind == "object":
            sym.kind = "object"
            for rp in value.pairs:
                v = rp.value
                py = v.to_python() if v else None
                detail = _bound_detail(py) if isinstance(py, dict) else _short_json(py)
                sym.children.append(
                    Symbol(
                        rp.key,
                        detail,
                        "number" if isinstance(py, dict) else "string",
                        rp.start,
                        max(rp.end, v.end if v else rp.end),
                        rp.key_node.start,
                        rp.key_node.end,
                    )
                )
        elif value is not None:
            sym.detail = _short_json(value.to_python())
            sym.kind = "object" if value.kind == "object" else "property"
        out.append(sym)
    return out


def _bound_detail(bound: dict[str, Any]) -> str:
    lo, hi = bound.get("min"), bound.get("max")
    if lo is not None and hi is not None:
        return f"{lo}..{hi}"
    if lo is not None:
        return f">= {lo}"
    if hi is not None:
        return f"<= {hi}"
    return "any value"


def _short_json(value: Any, limit: int = 60) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"
