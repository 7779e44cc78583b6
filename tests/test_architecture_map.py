"""docs/architecture.md is the map: every module of the three packages is named in the row
of its room (by its name in backticks, ``pool`` or ``pool.py``), or its room's row says "one
module per …" for the folder that holds it. A package's ``__init__`` is the folder's face and
is not asked for. A module nobody can find on the map is a module
a newcomer cannot find at all; this test names each one that is missing.
"""

from __future__ import annotations

import re
from pathlib import Path

from tests.support.layout import PACKAGE_DIRS, ROOT

DOC = ROOT / "docs" / "architecture.md"
TICKED = re.compile(r"`([^`]+)`")


def rows(text: str) -> list[tuple[set[str], str]]:
    """Each table row: the backticked names of its first cell, and the whole row's text."""
    out = []
    for line in text.splitlines():
        if not line.startswith("|") or line.startswith("| ---"):
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        out.append(({t.strip() for t in TICKED.findall(cells[0])}, line))
    return out


def unnamed(doc: str, package_dirs: dict[str, Path]) -> list[str]:
    table = rows(doc)
    missing = []
    for package, folder in package_dirs.items():
        for path in sorted(folder.rglob("*.py")):
            rel = path.relative_to(folder)
            if "__pycache__" in rel.parts or rel.name == "__init__.py":
                continue  # a folder's face: the folder is on the map with its modules
            if not _named(rel, table):
                missing.append(f"{package}: {rel.as_posix()}")
    return missing


def _named(rel: Path, table: list[tuple[set[str], str]]) -> bool:
    parts = rel.parts
    stem = rel.stem
    folders = [("/".join(parts[:i]) + "/") for i in range(len(parts) - 1, 0, -1)]
    if len(parts) == 1:
        return any(rel.name in heads or rel.stem in heads for heads, _ in table)
    for folder in folders:  # the nearest room that has a row of its own
        mine = [row for heads, row in table if folder in heads]
        if not mine:
            continue
        inner = "/".join(parts[len(folder.strip("/").split("/")) : -1])
        names = {stem, f"{stem}.py", f"{inner}/{stem}" if inner else stem}
        for row in mine:
            if names & set(TICKED.findall(row)) or inner in _per_module_folders(row):
                return True
        return False
    return False


def _per_module_folders(row: str) -> set[str]:
    """The folders a row says hold "one module per …": the sub-folder named in backticks just
    before the phrase (``"`checks/` (one module per check group)"``), else the room itself
    (``""``)."""
    out = set()
    row = row.strip("|").split("|", 1)[-1]  # the description, not the room's own name
    for found in re.finditer("one module per", row):
        before = row[max(0, found.start() - 60) : found.start()]
        ticks = TICKED.findall(before)
        near = ticks[-1] if ticks else ""
        out.add(near.rstrip("/") if near.endswith("/") else "")
    return out


def test_every_module_is_on_the_map() -> None:
    dirs = {package: ROOT / folder for package, folder in PACKAGE_DIRS.items()}
    missing = unnamed(DOC.read_text(encoding="utf-8"), dirs)
    assert not missing, "modules docs/architecture.md does not name:\n" + "\n".join(missing)


def test_the_map_check_can_fail(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    for rel in ("top.py", "room/a.py", "room/b.py", "room/sub/c.py", "many/x.py"):
        (pkg / rel).parent.mkdir(parents=True, exist_ok=True)
        (pkg / rel).write_text("")
    doc = (
        "| room | what |\n| --- | --- |\n"
        "| `room/` | `a` (one thing), `sub/` (one module per kind) |\n"
        "| `many/` | one module per plugin |\n"
    )
    assert unnamed(doc, {"pkg": pkg}) == ["pkg: room/b.py", "pkg: top.py"]
    assert unnamed(doc + "| `top.py` | the top |\n", {"pkg": pkg}) == ["pkg: room/b.py"]
