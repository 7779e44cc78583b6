"""The ready test (issue 44 item 3): a surviving mutant's counterexample, offered by the
language server as "add this check to the holdout" on the finding, one action per holdout
test file; the edit adds a test method and the imports it needs, and nothing is written
until the author applies it.

End to end: the real server over stdio, the real ``endstate-author prove`` on save (mutants
only, local sandbox), a real counterexample search; the edit applied as a client would, and
the holdout then run on the solution.
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest_lsp
from lsprotocol import types as lsp
from pytest_lsp import ClientServerConfig, LanguageClient

from endstate_author.assist.ready_test import appended, needed_imports
from tests.lsp.conftest import SERVER, Session, initialize
from tests.lsp.test_prove import ended, save, until
from tests.rules.conftest import good

_CACHE = tempfile.mkdtemp(prefix="es-ready-test-cache-")
atexit.register(shutil.rmtree, _CACHE, True)
ENV = {
    **os.environ,
    "ENDSTATE_LSP_PROVE_CMD": f"{sys.executable} -m endstate_author prove --only mutants",
    "ENDSTATE_AUTHOR_CACHE": _CACHE,
}

WITH_CLASS = (
    "import unittest\n\nfrom chunker import chunk\n\n\n"
    "class HoldoutTest(unittest.TestCase):\n"
    "    def test_single(self):\n        self.assertEqual(chunk([1, 2, 3], 2), [[1, 2], [3]])\n"
)
NO_CLASS = '"""More holdout checks, to come."""\n'
SOLUTION = (
    "def chunk(items, size):\n"
    "    if size < 1:\n"
    "        raise ValueError('size must be positive')\n"
    "    return [items[i:i + size] for i in range(0, len(items), size)]\n"
)


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER, server_env=ENV))
async def client(lsp_client: LanguageClient) -> AsyncIterator[LanguageClient]:
    yield lsp_client
    await lsp_client.shutdown_session()


def _offset(text: str, position: lsp.Position) -> int:
    lines = text.splitlines(keepends=True)
    return sum(len(line) for line in lines[: position.line]) + position.character


def _apply(text: str, edits: list[Any]) -> str:
    """The edits applied as a client applies them (ASCII text: columns are characters)."""
    for edit in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character),
                       reverse=True):
        start, end = _offset(text, edit.range.start), _offset(text, edit.range.end)
        text = text[:start] + edit.new_text + text[end:]
    return text


async def test_the_ready_test_is_offered_per_holdout_file_and_passes_on_the_solution(
    client: LanguageClient, tmp_path: Path
) -> None:
    session = Session(client, tmp_path)
    await initialize(client, {"trusted": True, "debounceMs": 0, "sandbox": "local"})
    root = session.task(good(), holdout={"tests/test_holdout_chunk.py": WITH_CLASS,
                                         "tests/test_more.py": NO_CLASS},
                        solution={"chunker/core.py": SOLUTION})
    uri, _ = await session.open(root)
    # one holdout file is open in the editor: its edit must carry that buffer's version
    with_class = root / "holdout/tests/test_holdout_chunk.py"
    client.text_document_did_open(lsp.DidOpenTextDocumentParams(text_document=lsp.TextDocumentItem(
        uri=with_class.as_uri(), language_id="python", version=7, text=WITH_CLASS)))
    save(client, uri)
    await until(lambda: len(ended(client)) == 1, timeout=300)
    solution_uri = (root / "solution/chunker/core.py").as_uri()

    def proven() -> list[lsp.Diagnostic]:
        return [d for d in client.diagnostics.get(solution_uri, [])  # type: ignore[misc]
                if d.code == "ES911"]

    await until(lambda: bool(proven()), timeout=30)
    finding = proven()[0]
    before = {p: p.read_bytes() for p in (root / "holdout").rglob("*.py")}
    actions = await client.text_document_code_action_async(lsp.CodeActionParams(
        text_document=lsp.TextDocumentIdentifier(uri=solution_uri), range=finding.range,
        context=lsp.CodeActionContext(diagnostics=[finding])))
    assert actions is not None
    ready = [a for a in actions if isinstance(a, lsp.CodeAction)
             and a.title.startswith("Add this check to the holdout")]
    titles = sorted(a.title for a in ready)
    assert titles == ["Add this check to the holdout: holdout/tests/test_holdout_chunk.py",
                      "Add this check to the holdout: holdout/tests/test_more.py"], titles
    # offering the action wrote nothing
    assert before == {p: p.read_bytes() for p in (root / "holdout").rglob("*.py")}
    for action in ready:
        assert action.edit is not None and action.edit.document_changes
        [change] = action.edit.document_changes
        assert isinstance(change, lsp.TextDocumentEdit)
        target = Path(change.text_document.uri.removeprefix("file://"))
        assert change.text_document.version == (7 if target == with_class else None)
        target.write_text(_apply(target.read_text(), list(change.edits)))  # the client applies
    more = (root / "holdout/tests/test_more.py").read_text()
    assert more.startswith(NO_CLASS + "import unittest\nfrom chunker import chunk\n"), more
    assert "class HoldoutCounterexampleTest(unittest.TestCase):" in more
    grown = with_class.read_text()
    assert grown.startswith(WITH_CLASS.rstrip("\n") + "\n\n    def test_tells_m"), grown
    assert grown.count("from chunker import chunk") == 1  # already bound: not imported twice
    # the added tests run, and pass on the solution
    work = tmp_path / "work"
    shutil.copytree(root / "fixture", work)
    shutil.copytree(root / "solution", work, dirs_exist_ok=True)
    shutil.copytree(root / "holdout", work, dirs_exist_ok=True)
    run = subprocess.run([sys.executable, "-m", "unittest", "-v", "tests.test_more",
                          "tests.test_holdout_chunk"], cwd=work, capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr
    assert "test_tells_m" in run.stderr and "OK" in run.stderr, run.stderr


def test_the_edit_keeps_the_file_s_shape() -> None:
    """CRLF endings kept, a unique method name, an exception class imported from its
    module, a name the file binds already never imported again."""
    example = {"call": "chunk([1], 0)", "module": "chunker", "name": "chunk",
               "mutant_id": "m0001", "solution": {"raises": "chunker.errors.Bad"},
               "assertion": "with self.assertRaises(Bad):\n    chunk([1], 0)"}
    assert needed_imports(example) == [("chunker", "chunk"), ("chunker.errors", "Bad")]
    data = (b"import unittest\r\nfrom chunker import chunk\r\n\r\n\r\n"
            b"class T(unittest.TestCase):\r\n    def test_tells_m0001(self):\r\n"
            b"        pass\r\n")
    edits = appended(Path("t.py"), data, example)
    assert edits is not None
    out = data
    for edit in sorted(edits, key=lambda e: e.start, reverse=True):
        out = out[: edit.start] + edit.new_text.encode() + out[edit.end :]
    text = out.decode()
    assert "\n" not in text.replace("\r\n", "")
    assert text.count("from chunker import chunk") == 1
    assert "from chunker.errors import Bad" in text
    assert "def test_tells_m0001_2(self):" in text
    compile(text, "t.py", "exec")
    assert appended(Path("t.py"), b"def broken(:\n", example) is None


def test_the_finding_carries_its_counterexample_in_json_and_text(tmp_path: Path) -> None:
    """`-o json`'s diagnostics carry the counterexample (no join with the checks needed) and
    the text output prints the ready assertion under the finding."""
    import io  # deferred: only this test renders text

    from endstate_author.lint.formats import render_text
    from endstate_author.prove.messages import diagnostics
    from endstate_author.prove.model import CheckResult

    (tmp_path / "solution").mkdir()
    (tmp_path / "solution/core.py").write_text(SOLUTION)
    example = {"call": "chunk([1, 2, 3], 1)", "source": "neighbour",
               "solution": {"value": ["list", []]}, "mutant": {"value": ["list", []]},
               "assertion": "self.assertEqual(chunk([1, 2, 3], 1), [[1], [2], [3]])"}
    check = CheckResult("mutant m00a1 fails", "mutants", "fail", detail="survives",
                        code="ES911", path="solution/core.py", line=4,
                        counterexample=example)
    [found] = diagnostics(tmp_path, [check])
    assert found.to_json()["counterexample"] == {**example, "mutant_id": "m00a1"}
    out = io.StringIO()
    render_text([found], out, color=False)
    lines = out.getvalue().splitlines()
    at = lines.index("           add to a holdout test:")
    assert lines[at + 1].strip() == example["assertion"], lines
