"""Reading a grader module's source: its top-level functions and signatures, with :mod:`ast`."""

from __future__ import annotations

import ast
from pathlib import Path

import endstate_author.engine.catalogue.cache as cache
from endstate_author.engine.catalogue.model import ParamInfo, ParsedDef, ParsedModule
from endstate_harness.graders import pyast

MAX_MODULE_BYTES = 2 << 20
"""A grader module larger than this is not parsed (its signatures count as unknown)."""


PARSE_COUNT = [0]
"""How many module files have been parsed in this process (tests assert the cache works)."""


def parse_module(path: Path) -> ParsedModule:
    """The parsed module at ``path``, from the cache when its mtime and size are unchanged."""
    try:
        st = path.stat()
    except OSError as exc:
        return ParsedModule(path, error=f"cannot be read: {exc.strerror or exc}")
    key = str(path)
    with cache.lock:
        hit = cache.module_cache.get(key)
        if hit is not None and hit[0] == st.st_mtime_ns and hit[1] == st.st_size:
            cache.module_cache.move_to_end(key)
            return hit[2]
    parsed = _parse_file(path, st.st_size)
    if cache.racy(st.st_mtime_ns):
        return parsed
    with cache.lock:
        cache.module_cache[key] = (st.st_mtime_ns, st.st_size, parsed)
        while len(cache.module_cache) > cache.CACHE_SIZE:
            cache.module_cache.popitem(last=False)
    return parsed


def _parse_file(path: Path, size: int) -> ParsedModule:
    if size > MAX_MODULE_BYTES:
        return ParsedModule(path, error=f"is {size} bytes, over the {MAX_MODULE_BYTES} read")
    try:
        data = path.read_bytes()
    except OSError as exc:
        return ParsedModule(path, error=f"cannot be read: {exc.strerror or exc}")
    PARSE_COUNT[0] += 1
    try:
        tree = pyast.parse(data, filename=str(path))
    except SyntaxError as exc:
        return ParsedModule(
            path, error=f"has a syntax error at line {exc.lineno}: {exc.msg}",
            error_line=exc.lineno,
        )
    except (ValueError, RecursionError, MemoryError) as exc:
        return ParsedModule(path, error=f"cannot be parsed: {exc}")
    lines = data.split(b"\n")
    out = ParsedModule(path)
    try:
        _collect(tree.body, out, lines)
    except RecursionError:
        out.dynamic = True
    return out


def _collect(body: list[ast.stmt], out: ParsedModule, lines: list[bytes]) -> None:
    for stmt in body:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
            _forget(out, stmt.name)
            out.defs[stmt.name] = _def_of(stmt, lines)
            if stmt.name == "__getattr__":
                out.dynamic = True
        elif isinstance(stmt, ast.ClassDef):
            _forget(out, stmt.name)
            out.opaque.add(stmt.name)
        elif isinstance(stmt, ast.ImportFrom):
            for alias in stmt.names:
                if alias.name == "*":
                    out.star.append((stmt.module or "", stmt.level))
                    continue
                local = alias.asname or alias.name
                _forget(out, local)
                out.reexports[local] = (stmt.module or "", alias.name, stmt.level)
        elif isinstance(stmt, ast.Import):
            for alias in stmt.names:
                local = alias.asname or alias.name.split(".")[0]
                _forget(out, local)
                out.opaque.add(local)
        elif isinstance(stmt, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            for target in targets:
                for node in ast.walk(target):
                    if isinstance(node, ast.Name):
                        _forget(out, node.id)
                        out.opaque.add(node.id)
        elif isinstance(stmt, ast.If | ast.For | ast.While | ast.With | ast.AsyncWith):
            _collect(stmt.body, out, lines)
            _collect(getattr(stmt, "orelse", []), out, lines)
        elif isinstance(stmt, ast.Try | ast.TryStar):
            _collect(stmt.body, out, lines)
            for handler in stmt.handlers:
                _collect(handler.body, out, lines)
            _collect(stmt.orelse, out, lines)
            _collect(stmt.finalbody, out, lines)


def _forget(out: ParsedModule, name: str) -> None:
    out.defs.pop(name, None)
    out.reexports.pop(name, None)
    out.opaque.discard(name)


def _text(node: ast.expr | None) -> str | None:
    if node is None:
        return None
    try:
        return ast.unparse(node)
    except Exception:  # unparse of odd trees; the text is only for display
        return None


def _def_of(node: ast.FunctionDef | ast.AsyncFunctionDef, lines: list[bytes]) -> ParsedDef:
    a = node.args
    params: list[ParamInfo] = []
    positional = [*a.posonlyargs, *a.args]
    first_default = len(positional) - len(a.defaults)
    for i, arg in enumerate(positional):
        default = _text(a.defaults[i - first_default]) if i >= first_default else None
        params.append(ParamInfo(arg.arg, "positional", _text(arg.annotation), default,
                                default is None, positional_only=i < len(a.posonlyargs)))
    if a.vararg is not None:
        params.append(ParamInfo(a.vararg.arg, "var_positional", _text(a.vararg.annotation)))
    for arg, kw_default in zip(a.kwonlyargs, a.kw_defaults, strict=True):
        default = _text(kw_default) if kw_default is not None else None
        params.append(ParamInfo(arg.arg, "keyword", _text(arg.annotation), default,
                                default is None))
    if a.kwarg is not None:
        params.append(ParamInfo(a.kwarg.arg, "var_keyword", _text(a.kwarg.annotation)))
    line = node.lineno
    raw = lines[line - 1] if 0 < line <= len(lines) else b""
    column = len(raw[: node.col_offset].decode("utf-8", errors="replace")) + 1
    text = raw.decode("utf-8", errors="replace")
    at = text.find(node.name, column - 1)
    end_column = at + len(node.name) + 1 if at >= 0 else len(text.rstrip()) + 1
    doc = ast.get_docstring(node) or ""
    return ParsedDef(node.name, params, doc, line, column, line, end_column)


def absolute_module(module: str, file: Path, source: str, level: int) -> str | None:
    """The absolute module a ``from <level dots><source> import`` in ``module`` refers to."""
    if level == 0:
        return source or None
    package = module.split(".") if file.name == "__init__.py" else module.split(".")[:-1]
    if level - 1 > len(package):
        return None
    base = package[: len(package) - (level - 1)]
    parts = [*base, *([source] if source else [])]
    return ".".join(parts) if parts else None
