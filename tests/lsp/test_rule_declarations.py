"""The language server holds no rule codes: which findings an action answers, which of a
proof's findings are prove's own and what an oversized task.json says all come from
endstate_author, where each rule declares them (issue 43, item 6)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from lsprotocol import types as lsp

from endstate_author.assist import mandatory_assertions
from endstate_author.engine.declare import Rule, found_by_prove, offering
from endstate_author.engine.diagnostics import Diagnostic
from endstate_author.lint.run import lint_task
from endstate_author.rules.registry import RULES
from tests.lsp.conftest import Session, initialize, manifest_text
from tests.rules.conftest import GOOD_MANIFEST, TaskBuilder

LSP_PACKAGE = Path(__file__).resolve().parents[2] / "lsp" / "endstate_lsp"
CODE = re.compile(r"ES\d{3}")


def test_no_module_of_the_language_server_names_a_rule_code() -> None:
    """Not in code, not in a docstring, not in a comment: a code written there is analysis
    the server keeps apart from the rules (and drifts when a rule changes)."""
    modules = sorted(LSP_PACKAGE.rglob("*.py"))
    assert modules
    named = {
        str(path.relative_to(LSP_PACKAGE)): sorted(set(CODE.findall(path.read_text("utf-8"))))
        for path in modules
    }
    assert {path: found for path, found in named.items() if found} == {}


def test_the_rules_declare_what_the_editor_offers_for_their_findings() -> None:
    assert offering("mandatory-assertions") == {"ES301", "ES302", "ES303", "ES304"}
    assert offering("create-init") == {"ES406"}
    assert found_by_prove("ES902") and found_by_prove("ES911")
    # lint's own findings that a proof repeats (a task that does not load, a rule's crash)
    assert not any(found_by_prove(code) for code in ("ES000", "ES001", "ES311", "ES999"))


def test_the_mandatory_assertions_action_answers_the_findings_whose_rule_offers_it(
    tmp_path: Path,
) -> None:
    """A rule that declares the offer is answered by the action, whatever its code: the
    action reads the declaration, not a list of codes."""
    data = json.loads(json.dumps(GOOD_MANIFEST))
    data["graders"] = data["graders"][:1]
    root = TaskBuilder(tmp_path / "suite")(data)
    manifest = root / "task.json"
    toy = Rule("ES998", "toy-offer", "warning", "task", None, "A toy rule.",
               ("mandatory-assertions",))
    RULES["ES998"] = toy
    try:
        found = [Diagnostic(code, "error", "x", manifest) for code in ("ES302", "ES998", "ES101")]
        action = mandatory_assertions(root, manifest.read_bytes(), found)
    finally:
        del RULES["ES998"]
    assert action is not None
    assert [d.code for d in action.diagnostics] == ["ES302", "ES998"]


async def test_the_server_attaches_the_findings_the_rules_name_to_the_action(
    session: Session,
) -> None:
    await initialize(session.client)
    data = json.loads(json.dumps(GOOD_MANIFEST))
    data["graders"] = data["graders"][:1]
    root = session.task(data)
    uri, diags = await session.open(root, manifest_text(data))
    got = await session.client.text_document_code_action_async(
        lsp.CodeActionParams(
            text_document=lsp.TextDocumentIdentifier(uri=uri),
            range=lsp.Range(start=lsp.Position(line=0, character=0),
                            end=lsp.Position(line=0, character=0)),
            context=lsp.CodeActionContext(diagnostics=[]),
        )
    )
    [add] = [a for a in got or [] if isinstance(a, lsp.CodeAction) and "mandatory" in a.title]
    offered = offering("mandatory-assertions")
    expected = sorted(str(d.code) for d in diags if str(d.code) in offered)
    assert expected, "the trimmed task should have findings the action answers"
    assert sorted(str(d.code) for d in add.diagnostics or []) == expected


async def test_an_oversized_buffer_gets_lints_own_finding(session: Session) -> None:
    """Over lint's 1 MiB limit the server says what lint says of the same file on disk, not
    a finding of its own."""
    await initialize(session.client)
    data = json.loads(json.dumps(GOOD_MANIFEST))
    data["description"] = "x" * (1 << 20)
    root = session.task(data)
    text = manifest_text(data)
    _uri, diags = await session.open(root, text)
    (root / "task.json").write_text(text, encoding="utf-8")
    on_disk = lint_task(root)
    mine = {(str(d.code), d.message) for d in diags if d.severity == 1}
    assert mine == {(d.code, d.message) for d in on_disk if d.severity == "error"
                    and d.file.name == "task.json"}
    assert any("1 MiB" in message for _, message in mine), mine
