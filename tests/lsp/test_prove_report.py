"""prove's findings are placed on the editor's buffer by the JSON path prove gives them."""

from __future__ import annotations

import json
from pathlib import Path

from endstate_author.engine.diagnostics import Diagnostic
from endstate_author.prove.messages import diagnostic_at
from endstate_lsp.prove_report import place_findings, read_prove

MANIFEST = {
    "graders": [
        {"name": "endstate.evals.graders:files_unchanged", "args": {"paths": ["tests"]}},
        {"name": "endstate.evals.graders:command_succeeds", "args": {"command": "true"}},
    ]
}


def test_prove_names_the_grader_by_its_path_and_the_server_follows_it(tmp_path: Path) -> None:
    (tmp_path / "task.json").write_text(json.dumps(MANIFEST, indent=2))
    found = diagnostic_at(tmp_path, "ES902", "fails on the solution", 1)
    assert found.pointer == ("graders", 1)
    report = {"diagnostics": [found.to_json(tmp_path)], "tasks": []}
    result = read_prove(json.dumps(report).encode(), 1, 0.1, tmp_path)
    (read,) = result.diagnostics
    assert read.pointer == ("graders", 1)
    # the buffer moved since prove read the file: the finding follows the grader, whatever
    # its message says
    buffer = ("\n\n" + json.dumps(MANIFEST, indent=4)).encode()
    (placed,) = place_findings([read], buffer)
    text = buffer.decode()
    start = text.index('{\n            "name": "endstate.evals.graders:command_succeeds"')
    assert placed.start_offset == start
    assert text[placed.start_offset : placed.end_offset].rstrip().endswith("}")


def test_a_finding_without_a_path_stays_where_prove_put_it(tmp_path: Path) -> None:
    diag = Diagnostic("ES911", "error", "a mutant survives", tmp_path / "task.json", 3, 5, 3, 9)
    assert place_findings([diag], json.dumps(MANIFEST).encode()) == [diag]
