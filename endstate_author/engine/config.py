"""Configuration: ``[tool.endstate-author]`` in the nearest pyproject.toml above the suite."""

from __future__ import annotations

from dataclasses import dataclass, field
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

from endstate_author.engine.diagnostics import Diagnostic, Severity


class ConfigError(ValueError):
    """A config file that cannot be used; the message names the file and key."""


@dataclass
class Config:
    select: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)
    severity: dict[str, Severity] = field(default_factory=dict)
    per_task_ignores: dict[str, list[str]] = field(default_factory=dict)
    grader_paths: list[Path] = field(default_factory=list)
    source: Path | None = None

    def enabled(self, code: str, task: str | None = None) -> bool:
        if self.select and not any(code.startswith(p) for p in self.select):
            return False
        if any(code.startswith(p) for p in self.ignore):
            return False
        if task is not None:
            for pattern, codes in self.per_task_ignores.items():
                if fnmatch(task, pattern) and any(code.startswith(p) for p in codes):
                    return False
        return True

    def apply(self, diag: Diagnostic) -> Diagnostic:
        override = self.severity.get(diag.code)
        if override is not None:
            diag.severity = override
        return diag


_KNOWN = {"select", "ignore", "severity", "per-task-ignores", "grader-paths"}


def _codes(value: Any, where: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f'{where} must be a list of code prefixes such as ["ES106"]')
    return [v.strip().upper() for v in value]


def parse_config(table: dict[str, Any], source: Path) -> Config:
    where = f"{source}: [tool.endstate-author]"
    unknown = sorted(set(table) - _KNOWN)
    if unknown:
        # deferred: difflib is only needed for this error, never by a lint the cache answers
        from endstate_author.engine.suggest import did_you_mean

        hint = did_you_mean(unknown[0], _KNOWN)
        raise ConfigError(f"{where} has an unknown key {unknown[0]!r}{hint}")
    config = Config(source=source)
    if "select" in table:
        config.select = _codes(table["select"], f"{where} select")
    if "ignore" in table:
        config.ignore = _codes(table["ignore"], f"{where} ignore")
    sev = table.get("severity", {})
    if not isinstance(sev, dict):
        raise ConfigError(f'{where} severity must be a table of CODE = "error"|"warning"')
    for code, level in sev.items():
        if level not in ("error", "warning"):
            raise ConfigError(f'{where} severity.{code} must be "error" or "warning"')
        config.severity[code.upper()] = level
    pti = table.get("per-task-ignores", {})
    if not isinstance(pti, dict):
        raise ConfigError(f"{where} per-task-ignores must be a table of pattern = [codes]")
    for pattern, codes in pti.items():
        config.per_task_ignores[pattern] = _codes(codes, f"{where} per-task-ignores.{pattern}")
    paths = table.get("grader-paths", [])
    if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
        raise ConfigError(f"{where} grader-paths must be a list of folders")
    config.grader_paths = [(source.parent / p) for p in paths]
    return config


def load_file(path: Path) -> Config:
    # a few ms, which a lint with no configuration file answered from the cache must not pay
    import tomllib  # deferred (see above)

    try:
        with path.open("rb") as handle:
            data = tomllib.load(handle)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from exc
    table = data.get("tool", {}).get("endstate-author", {})
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [tool.endstate-author] must be a table")
    return parse_config(table, path)


def discover(start: Path) -> Config:
    """The config of the nearest pyproject.toml above ``start`` that has our table."""
    found = config_file(start)
    return load_file(found) if found is not None else Config()


def config_file(start: Path) -> Path | None:
    """The nearest pyproject.toml above ``start`` that names our table (what :func:`discover`
    reads): a Ray node's copy of a suite carries it (``executors/archive.py``)."""
    start = start.resolve()
    if start.is_file():
        start = start.parent
    for folder in (start, *start.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            try:
                text = candidate.read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            if "endstate-author" in text:
                return candidate
    return None
