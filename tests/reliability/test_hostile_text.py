"""Text the end state writes is shown, never obeyed, wherever the toolkit prints it.

One payload — a clipboard write (OSC 52), an erased line (CSI 2K), a carriage return and a
green "PASS" drawn over it, a right-to-left override, an ``<img onerror>``, a
``[link](javascript:…)``, rich ``[bold]`` markup and a NUL — is the exception message of the
solution's code and what it writes on stderr. The real ``endstate-author prove`` (text,
json, sarif, github), the real ``eval`` with the oracle provider (console, report.md,
report.html, results.json) and the real language server's prove on save must show it as
visible escapes (``\\x1b``, ``\\u202e``), escaped Markdown and HTML, and keep it exactly as
data in JSON.
"""

from __future__ import annotations

import asyncio
import atexit
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unicodedata
from collections.abc import AsyncIterator
from html import unescape
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types as lsp
from markdown_it import MarkdownIt
from pytest_lsp import ClientServerConfig, LanguageClient
from rich.markup import render

from endstate_author.engine import textsafe
from endstate_author.redteam.attempt import render_transcript
from endstate_harness.agent.messages import Message, ToolCall, ToolResult
from tests.lsp.conftest import Session, initialize
from tests.support.tasks import TaskBuilder

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

CLI = [sys.executable, "-m", "endstate_author"]

OSC52 = "\x1b]52;c;ZXZpbA==\x07"
ERASE = "\x1b[2K"
FAKE_PASS = "\r\x1b[32mPASS\x1b[0m"
BIDI = "\u202eevil\u202c"
IMG = "<img src=x onerror=alert(1)>"
LINK = "[link](javascript:alert(1))"
MARKUP = "[bold]B[/bold]"
PAYLOAD = f"{OSC52}{ERASE}{FAKE_PASS} {BIDI} {IMG} {LINK} {MARKUP} \x00 end"

SOLUTION: dict[str, str | bytes] = {
    "chunker/core.py": (
        "import sys\n"
        f"PAYLOAD = {PAYLOAD!r}\n"
        "def chunk(items, size):\n"
        "    sys.stderr.write(PAYLOAD + '\\n')\n"
        "    raise RuntimeError(PAYLOAD)\n"
    )
}
"""The solution the oracle writes and prove grades: every test run prints and raises it."""

RAW_PIECES = [OSC52, ERASE, "\x1b[32mPASS", BIDI, "\x00"]
"""Pieces of the payload that must never reach a terminal or Markdown as they are."""
RAW_ON_LIVE = [OSC52, OSC52 + ERASE, "\x1b[32mPASS", BIDI, "\x00"]
"""The same on stderr, where rich's live display erases its own lines (``\x1b[2K``)."""


def unsafe_chars(text: str, keep: str = "\n") -> list[str]:
    """Every control, format or separator character in ``text`` but those in ``keep``."""
    return sorted(
        {
            f"U+{ord(c):04X}"
            for c in text
            if c not in keep and unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp", "Cs")
        }
    )


def assert_shown(text: str, where: str, keep: str = "\n") -> None:
    """No raw control or bidi character in ``text``; the payload is there as visible escapes."""
    assert unsafe_chars(text, keep) == [], f"{where}: {unsafe_chars(text, keep)}"
    assert "\\x1b]52;c;ZXZpbA==\\x07" in text, f"{where}: the clipboard write is not shown"
    assert "\\u202eevil\\u202c" in text, f"{where}: the bidi override is not shown"


def assert_carried(value: str, where: str) -> None:
    """JSON data: the payload's pieces are there as they are (the data round-trips)."""
    for piece in [OSC52, ERASE, "\x1b[32mPASS\x1b[0m", BIDI, IMG, LINK, MARKUP, "\x00"]:
        assert piece in value, f"{where}: {piece!r} is not carried as data"


def run(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, *args],
        capture_output=True,
        text=True,
        timeout=480,
        cwd=cwd,
        env={**os.environ, "COLUMNS": "4000", "ENDSTATE_AUTHOR_CACHE": str(cwd / "cache"), **env},
        encoding="utf-8",
        errors="surrogateescape",
    )


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("hostile-text")
    TaskBuilder(base / "suite")(solution=SOLUTION)
    return base


def es902(diagnostics: list[dict[str, Any]]) -> str:
    [message] = [d["message"] for d in diagnostics if d["code"] == "ES902"]
    return str(message)


def test_prove_text_shows_the_payload_and_obeys_none_of_it(suite: Path) -> None:
    """Forced to a terminal (rich draws colours), the findings and the progress carry the
    payload only as visible escapes; rich read no markup in it."""
    done = run(["prove", "suite", "--sandbox", "local", "--only", "directions"], suite,
               FORCE_COLOR="1", TERM="xterm-256color")  # fmt: skip
    assert done.returncode == 1, done.stderr
    out = done.stdout
    for piece in RAW_PIECES:
        assert piece not in out, piece
    for piece in RAW_ON_LIVE:
        assert piece not in done.stderr, piece
    # rich's own colours are the only escape sequences: each is a plain SGR
    stripped = re.sub(r"\x1b\[[0-9;]*m", "", out)
    assert_shown(stripped, "prove text")
    assert MARKUP in stripped, "rich read the end state's [bold] as markup"
    assert "B[/bold]" in stripped
    assert "\\x00" in stripped


@pytest.mark.parametrize("fmt", ["json", "sarif"])
def test_prove_json_and_sarif_keep_the_data_and_no_control_raw(suite: Path, fmt: str) -> None:
    done = run(["prove", "suite", "--sandbox", "local", "--only", "directions", "-o", fmt],
               suite)  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert unsafe_chars(done.stdout) == [], unsafe_chars(done.stdout)  # JSON escapes them
    data = json.loads(done.stdout)
    if fmt == "json":
        message = es902(data["diagnostics"])
    else:
        [message] = [
            r["message"]["text"] for r in data["runs"][0]["results"] if r["ruleId"] == "ES902"
        ]
    assert_carried(message, fmt)


def test_prove_github_annotations_show_the_payload(suite: Path) -> None:
    done = run(["prove", "suite", "--sandbox", "local", "--only", "directions", "-o", "github"],
               suite)  # fmt: skip
    assert done.returncode == 1, done.stderr
    [line] = [x for x in done.stdout.splitlines() if x.startswith("::error") and "ES902" in x]
    assert_shown(line, "github")


@pytest.fixture(scope="module")
def evaluated(suite: Path) -> tuple[subprocess.CompletedProcess[str], Path]:
    out = suite / "eval-out"
    done = run(["eval", "suite", "--sandbox", "local", "--provider", "oracle", "--out",
                str(out)], suite, FORCE_COLOR="1", TERM="xterm-256color")  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    return done, out


def test_eval_console_shows_the_payload(
    evaluated: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    done, _ = evaluated
    for piece in RAW_PIECES:
        assert piece not in done.stdout, piece
    for piece in RAW_ON_LIVE:
        assert piece not in done.stderr, piece
    stripped = re.sub(r"\x1b\[[0-9;]*m", "", done.stdout)
    assert_shown(stripped, "eval console")
    assert MARKUP in stripped


def test_eval_report_md_renders_the_payload_as_text(
    evaluated: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    """report.md holds no raw control character, and rendered (CommonMark with raw HTML on,
    and GitHub's tables) it makes no image, link, HTML or emphasis of the payload."""
    _, out = evaluated
    md = (out / "report.md").read_text(encoding="utf-8")
    assert_shown(md, "report.md")
    for piece in RAW_PIECES:
        assert piece not in md, piece
    html = MarkdownIt("commonmark", {"html": True}).enable("table").render(md)
    assert "<img" not in html and "<a " not in html and "<strong>" not in html, html
    assert "onerror" not in html or "&lt;img src=x onerror=alert(1)&gt;" in html
    assert "[link](javascript:alert(1))" in html  # shown as the text it is


def test_eval_report_html_escapes_the_payload(
    evaluated: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    _, out = evaluated
    page = (out / "report.html").read_text(encoding="utf-8")
    assert IMG not in page and "&lt;img src=x onerror=alert(1)&gt;" in page


def test_eval_results_json_keeps_the_payload_as_data(
    evaluated: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    _, out = evaluated
    data = json.loads((out / "results.json").read_text(encoding="utf-8"))
    details = [
        str(c.get("detail") or "") for r in data["results"] for c in r.get("checks") or []
    ]
    assert any(OSC52 in d and BIDI in d and IMG in d for d in details), details


SERVER = [sys.executable, "-m", "endstate_lsp"]
_LSP_CACHE = tempfile.mkdtemp(prefix="endstate-hostile-lsp-cache-")
atexit.register(shutil.rmtree, _LSP_CACHE, True)


@pytest_lsp.fixture(
    config=ClientServerConfig(
        server_command=SERVER,
        server_env={
            **os.environ,
            "ENDSTATE_LSP_PROVE_CMD": f"{sys.executable} -m endstate_author prove "
            "--only directions",
            "ENDSTATE_AUTHOR_CACHE": _LSP_CACHE,  # the proof cache of this test alone
        },
    )
)
async def prove_client(lsp_client: LanguageClient) -> AsyncIterator[LanguageClient]:
    yield lsp_client
    await lsp_client.shutdown_session()


async def test_language_server_messages_show_the_payload(
    prove_client: LanguageClient, tmp_path: Path
) -> None:
    """Prove on save: the ES902 diagnostic, the progress and the log messages the server
    sends carry the payload as visible escapes only."""
    session = Session(prove_client, tmp_path)
    await initialize(prove_client, {"trusted": True, "debounceMs": 0, "sandbox": "local"})
    root = session.task(solution=SOLUTION)
    uri, _ = await session.open(root)
    prove_client.text_document_did_save(
        lsp.DidSaveTextDocumentParams(text_document=lsp.TextDocumentIdentifier(uri=uri))
    )
    for _ in range(2400):  # up to 240 s of 0.1 s sleeps
        if [d for d in prove_client.diagnostics.get(uri, []) if d.code == "ES902"]:
            break
        await asyncio.sleep(0.1)
    [finding] = [d for d in prove_client.diagnostics[uri] if d.code == "ES902"]
    assert_shown(finding.message, "diagnostic", keep="\n\t")
    progress = [
        str(getattr(r, "message", None) or "")
        for reports in prove_client.progress_reports.values()
        for r in reports
        if isinstance(r, lsp.WorkDoneProgressReport | lsp.WorkDoneProgressEnd)
    ]
    assert progress, "prove on save reported no progress"
    logs = [m.message for m in prove_client.log_messages]
    for text in [*progress, *logs]:
        assert unsafe_chars(text, keep="\n\t") == [], text


# --- the sanitiser itself, over every character class it must handle ----------------------

NASTY = [
    PAYLOAD,
    "".join(chr(c) for c in [*range(0x20), 0x7F, *range(0x80, 0xA0)]),
    "\u200b\u200e\u2028\u2029\u2066\u2069\ufeff\U000e0041 tag",
    "```` fence ```` ` x `` <script>alert(1)</script> ![i](x) <https://e.com> www.e.com a@b.c",
    "*em* _em_ ~~s~~ $x$ #1 &amp; \\[esc] | cell |",
    "[bold red]x[/] \\[bold] trailing\\",
]


@pytest.mark.parametrize("text", NASTY, ids=range(len(NASTY)))
def test_the_sanitiser_shows_everything_and_renders_as_itself(text: str) -> None:
    """``shown`` leaves no unsafe character; rich prints ``markup()`` (inside a tag, as the
    toolkit uses it) as exactly ``shown``;
    Markdown renders ``md_text`` and ``md_code`` (in a table too) as exactly the text, and a
    ``md_block`` is one code block whatever its lines hold; ``json_text`` round-trips."""
    assert unsafe_chars(textsafe.shown(text), keep="\n\t") == []
    assert unsafe_chars(textsafe.one_line(text), keep="") == []
    assert render(f"[bold]{textsafe.markup(text)}[/bold]").plain == textsafe.shown(text)
    md = MarkdownIt("commonmark", {"html": True}).enable("table")
    inline = md.renderInline(textsafe.md_text(text))
    assert "<" not in inline.replace("&lt;", "")  # no tag of any kind
    assert unescape(inline) == textsafe.one_line(text)
    code = md.renderInline(textsafe.md_code(text))
    assert unescape(code.removeprefix("<code>").removesuffix("</code>")).strip() == (
        textsafe.one_line(text).strip()
    )
    table = md.render(f"| a | b |\n| --- | --- |\n| {textsafe.md_code(text, in_table=True)} | "
                      f"{textsafe.md_text(text)} |\n")  # fmt: skip
    assert table.count("<td>") == 2 and "<img" not in table and "<a " not in table
    block = md.render("\n".join(textsafe.md_block(text + "\n```\n# heading\n<b>x</b>")))
    assert block.count("<pre>") == 1 and "<h1>" not in block and "<b>" not in block
    as_json = textsafe.json_text(json.dumps({"k": text}, ensure_ascii=False))
    assert unsafe_chars(as_json, keep="\n") == [] and json.loads(as_json) == {"k": text}


def test_the_red_team_transcript_quotes_the_model() -> None:
    """transcript.md: the model's words and a tool's output are quoted, never rendered."""
    transcript = render_transcript([
        Message(role="assistant", content=f"done {IMG} {LINK}",
                tool_calls=[ToolCall(id="1", name="bash`x", arguments={"c": PAYLOAD})]),
        Message(role="tool", tool_result=ToolResult(call_id="1", content=f"```\n{PAYLOAD}")),
    ])  # fmt: skip
    assert unsafe_chars(transcript) == []
    html = MarkdownIt("commonmark", {"html": True}).render(transcript)
    assert "<img" not in html and "<a " not in html and "<strong>" not in html
    assert html.count("<pre>") == 2


def test_the_sanitiser_knows_every_unsafe_character_of_this_python() -> None:
    """The sanitiser's character classes are regular expressions (C speed); checked here
    against the running Python's own Unicode tables, every control, format, surrogate and
    separator character is escaped by ``shown`` and by ``json_text``."""
    def missed_by(char: str) -> bool:
        kept = char in "\n\t"
        return textsafe.one_line(char) == char or (char in textsafe.shown(char)) != kept

    missed = [
        f"U+{code:04X}"
        for code in range(0x110000)
        if textsafe.unsafe(chr(code)) and missed_by(chr(code))
    ]
    assert missed == []
    probe = "".join(chr(c) for c in range(0x80, 0x110000) if textsafe.unsafe(chr(c)))
    assert unsafe_chars(textsafe.json_text(json.dumps(probe, ensure_ascii=False))) == []
