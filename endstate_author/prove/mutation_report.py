"""prove's mutants in the report people already read: the mutation-testing report schema
(the JSON format the Stryker tools publish and other mutation tools export to) and an HTML
view of it built on the ``mutation-testing-elements`` web component.

Why this format: an author who has used a mutation tool knows the view — every mutant on its
line of the file, killed or survived, filterable — and a team's dashboards already read the
JSON. Each of prove's outcomes maps to the schema's status that says the same thing, never a
better one:

========================================  =====================================================
prove                                      schema status (``statusReason``: prove's own words)
========================================  =====================================================
a grader failed on it (killed)             ``Killed``
cut at its time bound (killed: timed out)  ``Timeout``
every grader passed (ES911, ES916)         ``Survived``; an ES911's counterexample (the call,
                                           both outcomes, the ready assertion) in its
                                           ``description``
marked equivalent, sampled out (its        ``Ignored`` (not tested, by design; not in the
line's first mutants all killed), not run  score)
(time budget, ``--mutants``), unassessed
(its check could not run, ES908)
========================================  =====================================================

prove has no per-mutant coverage, so ``NoCoverage`` is never written. A mutant's
``location`` spans the lines it changes in the solution's file, and its ``replacement`` is
the mutant's text of those lines, so the view shows the edit in place.

The HTML page holds the component's script (base64, run from a ``blob:`` URL, so no text of
it can end the page's ``<script>``) and the report (JSON with ``<`` escaped), under a content
security policy that allows no network at all: the page works offline and sends nothing.
"""

from __future__ import annotations

import base64
import difflib
import json
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from endstate_author import __version__
from endstate_author.prove.checks.mutants import GROUP_NAME, SAMPLED_OUT, mutant_set
from endstate_author.prove.model import CheckResult, TaskProof
from endstate_author.prove.mutant_batch import timed_out
from endstate_author.prove.mutation import Mutant
from endstate_harness.task import load_task

SCHEMA_VERSION = "2"
ELEMENTS_FILE = "mutation-test-elements.js"
ASSETS_ENV = "ENDSTATE_AUTHOR_WEB_ASSETS"
"""A folder holding :data:`ELEMENTS_FILE`, for a checkout without ``make web-assets``."""
JSON_NAME = "mutation-report.json"
HTML_NAME = "mutation-report.html"
_LANGUAGES = {".py": "python", ".js": "javascript", ".ts": "typescript", ".md": "markdown",
              ".json": "json", ".sh": "bash", ".toml": "toml", ".yaml": "yaml", ".yml": "yaml"}


def elements_script() -> Path | None:
    """The component's browser bundle: shipped in the wheel (``data/web/``, put there by
    ``hatch_build.py``; in a checkout by ``make web-assets``), else in ``$ENDSTATE_AUTHOR_WEB_
    ASSETS``; None when neither has it."""
    places = [Path(__file__).resolve().parents[1] / "data" / "web"]
    if os.environ.get(ASSETS_ENV):
        places.append(Path(os.environ[ASSETS_ENV]))
    for place in places:
        found = place / ELEMENTS_FILE
        if found.is_file():
            return found
    return None


# ----- the JSON -------------------------------------------------------------------------------


def _status(check: CheckResult | None) -> tuple[str, str]:
    """The schema's status of a mutant whose check is ``check`` (None: it has none, so it
    was not run), and the reason in prove's words."""
    if check is None:
        return "Ignored", "not run (over --mutants, or its check group was not asked for)"
    if check.outcome == "pass":
        return ("Timeout" if timed_out(check.detail) else "Killed"), check.detail
    if check.outcome == "fail":
        return "Survived", check.detail
    if check.outcome == "unassessed":
        return "Ignored", f"not assessed: its check could not run (ES908): {check.detail}"
    if check.detail.startswith(SAMPLED_OUT):
        return "Ignored", check.detail
    return "Ignored", check.detail or "not run"


@dataclass(frozen=True)
class _Span:
    start: tuple[int, int]
    end: tuple[int, int]
    replacement: str


def _span(solution: str, mutated: str, line: int) -> _Span:
    """Where the mutant differs from the solution (whole lines), and its text there."""
    old, new = solution.splitlines(), mutated.splitlines()
    changes = [op for op in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes()
               if op[0] != "equal"]
    if not changes:  # no textual change (a file's bytes only): the line it names
        at = min(max(line, 1), max(len(old), 1))
        text = old[at - 1] if old else ""
        return _Span((at, 1), (at, len(text) + 1), text)
    i1, j1 = changes[0][1], changes[0][3]
    i2, j2 = changes[-1][2], changes[-1][4]
    replacement = "\n".join(new[j1:j2])
    if i1 == i2:  # lines inserted before line i1 + 1: an empty range there
        at = min(i1 + 1, max(len(old), 1))
        return _Span((at, 1), (at, 1), replacement + "\n")
    return _Span((i1 + 1, 1), (i2, len(old[i2 - 1]) + 1), replacement)


def _inside(path: Path, folder: Path) -> bool:
    """Whether ``path`` is a regular file really where it says inside ``folder`` (no link on
    the way)."""
    try:
        return (not path.is_symlink() and path.is_file()
                and path.resolve().is_relative_to(folder.resolve())
                and path.resolve() == folder.resolve() / path.relative_to(folder))
    except (OSError, ValueError):
        return False


def _description(mutant: Mutant, check: CheckResult | None) -> str:
    example = check.counterexample if check is not None else None
    if not example:
        return mutant.description
    text = f"{mutant.description}; counterexample: {example.get('call')}"
    if example.get("assertion"):
        text += f"; add to a holdout test: {example['assertion']}"
    return text


def _mutants(mutants: list[Mutant], checks: dict[str, CheckResult],
             equivalent: dict[str, str], fixture: Path, solution: Path) -> Iterator[
        tuple[str, dict[str, Any]]]:
    for mutant in mutants:
        source_file = solution / mutant.path
        if not _inside(source_file, solution):
            continue  # a link out of the solution: never read into a report
        try:
            source = source_file.read_bytes().decode("utf-8", "replace")
            mutated_bytes = mutant.file_bytes(fixture)
        except OSError:
            continue
        mutated = (mutated_bytes or b"").decode("utf-8", "replace")
        check = checks.get(mutant.id)
        if mutant.id in equivalent:
            status, reason = "Ignored", f"marked equivalent: {equivalent[mutant.id]}"
        else:
            status, reason = _status(check)
        span = _span(source, mutated, mutant.line)
        entry: dict[str, Any] = {
            "id": mutant.id,
            "mutatorName": mutant.kind,
            "description": _description(mutant, check),
            "replacement": span.replacement,
            "location": {"start": {"line": span.start[0], "column": span.start[1]},
                         "end": {"line": span.end[0], "column": span.end[1]}},
            "status": status,
        }
        if reason:
            entry["statusReason"] = reason
        if check is not None and check.outcome in ("pass", "fail"):
            entry["duration"] = round(check.seconds * 1000, 1)
        yield mutant.path, entry | {"_source": source}


def task_files(proof: TaskProof) -> dict[str, dict[str, Any]]:
    """The schema's ``files`` for one task's mutants (keys: ``solution/<path>``); {} when the
    task has no mutant checks (none asked for, no solution, it does not load)."""
    checks = {c.check.split()[1]: c for c in proof.checks
              if c.group == GROUP_NAME and c.check.startswith("mutant m")}
    if not checks:
        return {}
    try:
        task = load_task(proof.path)
    except Exception:  # a task that does not load has no mutants to show
        return {}
    found = mutant_set(task)
    if found is None or task.solution is None:
        return {}
    files: dict[str, dict[str, Any]] = {}
    for path, entry in _mutants(found.mutants, checks, found.equivalent,
                                task.fixture, task.solution):
        source = entry.pop("_source")
        key = f"solution/{path}"
        slot = files.setdefault(key, {"language": _LANGUAGES.get(Path(path).suffix, "text"),
                                      "source": source, "mutants": []})
        slot["mutants"].append(entry)
    return files


def report(proofs: Sequence[TaskProof]) -> dict[str, Any]:
    """The mutation-testing report of ``proofs``: each task's files under its id
    (``<task id>/solution/<path>``), so one view holds a suite."""
    files: dict[str, dict[str, Any]] = {}
    for proof in proofs:
        prefix = proof.task_id
        if any(k.startswith(f"{prefix}/") for k in files):  # two tasks of one id: by path
            prefix = proof.path.as_posix().lstrip("/")
        for key, value in task_files(proof).items():
            files[f"{prefix}/{key}"] = value
    return {
        "schemaVersion": SCHEMA_VERSION,
        "thresholds": {"high": 80, "low": 60},
        "files": files,
        "framework": {"name": "endstate-author prove", "version": __version__},
    }


# ----- the HTML view --------------------------------------------------------------------------

_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src \
'unsafe-inline' blob:; style-src 'unsafe-inline'; img-src data:; font-src data:">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
</head>
<body>
<mutation-test-report-app title-postfix="endstate-author prove"></mutation-test-report-app>
<script id="report" type="application/json">{report}</script>
<script id="elements" type="text/plain">{script}</script>
<script>
(function () {{
  var text = atob(document.getElementById("elements").textContent.trim());
  var bytes = new Uint8Array(text.length);
  for (var i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i);
  var tag = document.createElement("script");
  tag.src = URL.createObjectURL(new Blob([bytes], {{type: "text/javascript"}}));
  tag.onload = function () {{
    document.querySelector("mutation-test-report-app").report =
      JSON.parse(document.getElementById("report").textContent);
  }};
  document.head.appendChild(tag);
}})();
</script>
</body>
</html>
"""


def html(document: dict[str, Any], script: bytes, title: str = "Mutants of the solution") -> str:
    """The report's page: the component (``script``) and ``document`` inside, no network."""
    data = json.dumps(document, ensure_ascii=True).replace("<", "\\u003c").replace(">", "\\u003e")
    shown = title.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _PAGE.format(title=shown, report=data,
                        script=base64.b64encode(script).decode("ascii"))


def write(proofs: Sequence[TaskProof], folder: Path,
          script: Path | None = None) -> tuple[Path, Path | None]:
    """``mutation-report.json`` and, when the component is at hand, ``mutation-report.html``
    in ``folder`` (created); the paths written (None: no HTML, the component is missing)."""
    document = report(proofs)
    folder.mkdir(parents=True, exist_ok=True)
    json_path = folder / JSON_NAME
    _replace(json_path, json.dumps(document, indent=2, ensure_ascii=False))
    script = script or elements_script()
    if script is None:
        return json_path, None
    html_path = folder / HTML_NAME
    _replace(html_path, html(document, script.read_bytes()))
    return json_path, html_path


def _replace(path: Path, text: str) -> None:
    """Written whole or not at all (a viewer never reads half a report), and never
    through a link in the folder (the old file, or link, is replaced, its target untouched)."""
    partial = path.with_name(f".{path.name}.part")
    partial.unlink(missing_ok=True)  # never written through a link left in its place
    try:
        with open(partial, "x", encoding="utf-8") as out:
            out.write(text)
        partial.replace(path)
    finally:
        partial.unlink(missing_ok=True)  # gone once replaced; a failed write leaves none
