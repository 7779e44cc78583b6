"""ES6 in the editor: findings as the task is typed (in task.json and on the holdout file),
and the ES601 quick fix that names the missing name in prompt.md (the real server over
stdio); ES911/ES912 and the mutation score as the server reads them from a proof."""

from __future__ import annotations

import json
from pathlib import Path

from lsprotocol import types as lsp

from endstate_lsp.prove_report import read_prove
from tests.lsp.conftest import Session, initialize, manifest_text
from tests.lsp.test_prove import until
from tests.rules.conftest import GOOD_MANIFEST, HOLDOUT
from tests.rules.test_es6_prompt import HOLDOUT_NEW_NAME, SOLUTION_PADDED


async def test_es601_on_the_holdout_file_and_its_quick_fix(session: Session) -> None:
    await initialize(session.client)
    root = session.task(
        prompt="Make chunking keep the final partial chunk.\n",
        holdout=HOLDOUT_NEW_NAME,
        solution=SOLUTION_PADDED,
    )
    await session.open(root)
    holdout_uri = (root / "holdout/tests/test_holdout_pad.py").as_uri()

    def es601() -> list[lsp.Diagnostic]:  # the holdout file's own publish follows task.json's
        got = session.client.diagnostics.get(holdout_uri, [])  # type: ignore[misc]
        return [d for d in got if d.code == "ES601"]

    await until(lambda: len(es601()) == 2)
    published = es601()
    [first, _fill] = [d for d in published if d.code == "ES601"]
    assert (first.range.start.line, first.range.start.character) == (2, 25)
    assert first.severity == lsp.DiagnosticSeverity.Warning
    actions = await session.client.text_document_code_action_async(
        lsp.CodeActionParams(
            text_document=lsp.TextDocumentIdentifier(uri=holdout_uri),
            range=first.range,
            context=lsp.CodeActionContext(diagnostics=[first]),
        )
    )
    [fix] = [a for a in actions or [] if isinstance(a, lsp.CodeAction)]
    assert fix.title == "Name `chunk_padded` in prompt.md"
    assert fix.edit is not None and fix.edit.document_changes
    [change] = fix.edit.document_changes
    assert isinstance(change, lsp.TextDocumentEdit)
    assert change.text_document.uri == (root / "prompt.md").as_uri()
    assert "`chunk_padded`" in change.edits[0].new_text


async def test_es602_as_task_json_is_typed(session: Session) -> None:
    await initialize(session.client)
    root = session.task(holdout=HOLDOUT)
    uri, diags = await session.open(root)
    assert not [d for d in diags if d.code.startswith("ES6")]  # type: ignore[union-attr]
    data = json.loads(json.dumps(GOOD_MANIFEST))
    data["graders"].append(
        {"name": "endstate.evals.graders:paths_exist", "args": {"paths": ["chunker/pad.py"]}}
    )
    after = await session.replace(uri, manifest_text(data))
    [hit] = [d for d in after if d.code == "ES602"]
    assert "chunker/pad.py" in hit.message


def test_prove_report_places_es911_on_the_solution_line_and_shows_the_score(
    tmp_path: Path,
) -> None:
    """After a proof the server shows ES911 where prove put it (the solution file's line)
    and the mutation score in the code lens summary."""
    solution_file = tmp_path / "task" / "solution" / "pkg" / "m.py"
    report = {
        "diagnostics": [
            {"code": "ES911", "severity": "error", "message": "mutant m0000abcd fails: ...",
             "file": str(solution_file), "line": 4, "column": 5, "end_line": 4,
             "end_column": 20},
            {"code": "ES912", "severity": "warning", "message": "visible tests ...",
             "file": "task/task.json", "line": 1, "column": 1, "end_line": 1, "end_column": 1},
        ],
        "tasks": [{"task": "t", "checks": [{"check": "mutant m0000abcd fails",
                                            "outcome": "fail"}],
                   "mutation_score": {"killed": 3, "run": 4}}],
    }  # fmt: skip
    result = read_prove(json.dumps(report).encode(), 1, 2.0, tmp_path)
    es911, es912 = result.diagnostics
    assert (es911.file, es911.line, es911.column, es911.severity) == (solution_file, 4, 5, "error")
    assert es912.file == tmp_path / "task/task.json" and es912.severity == "warning"
    assert "mutants 3/4 killed" in result.summary
