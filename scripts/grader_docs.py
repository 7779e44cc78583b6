"""The docs page of the grader library, written from the graders' records when the site builds.

A mkdocs hook (``hooks:`` in mkdocs.yml): where a page holds the line :data:`MARK`, the hook
puts one section per record of :data:`endstate_harness.graders.names.GRADERS` — the names a
task gives it, its parameters and first paragraph read from its source as lint reads them
(:mod:`endstate_author.engine.catalogue.library`, nothing imported), and what its record says. No
generated page is committed, so a new grader reaches the docs with its record alone.

    python scripts/grader_docs.py    # print the sections
"""

from __future__ import annotations

import re
from typing import Any

from endstate_author.engine.catalogue.library import builtin_info
from endstate_harness.graders.names import (
    GRADERS,
    REFERENCE_MODULE,
    THIS_MODULE,
    GraderRecord,
)

MARK = "<!-- grader-library: written from the graders' records by scripts/grader_docs.py -->"
_ROLE = re.compile(r":[a-z]+:`~?([^`]+)`")


def _markdown(text: str) -> str:
    """A docstring paragraph in Markdown: ``code`` as `code`, Sphinx roles as code."""
    return _ROLE.sub(r"`\1`", text).replace("``", "`")


def _reads(record: GraderRecord) -> str:
    if record.runs_tests == "command":
        return "runs the shell command of its `command` argument"
    if record.runs_tests == "unittest":
        return "runs the tests (unittest discovery) in the sandbox"
    if record.sealed_only:
        return "only the sealed end state and the pristine fixture; starts no process"
    return "the sandbox (it may run commands)"


def section(record: GraderRecord) -> str:
    """One grader's section of the page."""
    info = builtin_info(record.name)
    names = [f"`{THIS_MODULE}:{record.name}`"]
    if record.reference:
        names.append(f"`{REFERENCE_MODULE}:{record.name}` (as in endstate 0.3.0)")
    lines = [f"### `{record.name}`", "", f"- **Named** {' or '.join(names)}"]
    if info is not None:
        params = [p for p in info.params if p.name != "sandbox"]
        shown = [
            f"`{p.name}: {p.annotation}`" + ("" if p.required else f" (default `{p.default}`)")
            for p in params
        ]
        lines.append(f"- **Arguments** {', '.join(shown) if shown else 'none'}")
    lines.append(f"- **Reads** {_reads(record)}")
    if record.reads_paths is not None:
        what = "each path of" if record.reads_paths.many else "the path of"
        lines.append(f"- **Lint** checks {what} `{record.reads_paths.name}` is in fixture/ or "
                     "solution/ (ES506)")
    vendored = ("yes: `endstate-author vendor` copies it into a suite"
                if record.vendor_with is not None
                else ("endstate has it" if record.reference else "no"))
    lines.append(f"- **Under plain endstate** {vendored}")
    if info is not None and info.doc:
        lines += ["", _markdown(info.doc.split("\n\n", 1)[0])]
    return "\n".join(lines) + "\n"


def page_sections() -> str:
    """Every grader's section, in the records' order."""
    return "\n".join(section(record) for record in GRADERS)


def on_page_markdown(markdown: str, **_: Any) -> str:
    """The mkdocs hook: the mark replaced by the sections."""
    return markdown.replace(MARK, page_sections()) if MARK in markdown else markdown


if __name__ == "__main__":
    print(page_sections())
