"""The documentation: the site builds strictly, the rule pages say what the rules say, and
the README stays short with links that resolve.

The strict build is mkdocs' own (``strict: true`` in mkdocs.yml: a warning, a broken link or
anchor, or a missing included file fails it), run into a temporary folder.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MKDOCS = Path(sys.executable).parent / "mkdocs"
GENERATE = ROOT / "scripts" / "gen_rule_docs.py"
LINK = re.compile(r"\]\(([^)#\s]+)(#[^)\s]*)?\)")


def build(config_dir: Path, site: Path) -> subprocess.CompletedProcess[str]:
    if not MKDOCS.exists():
        print("SKIP REASON: mkdocs is not installed in the venv (pip install -e '.[dev]')")
        pytest.skip("mkdocs is not installed")
    return subprocess.run(
        [str(MKDOCS), "build", "--strict", "--config-file", str(config_dir / "mkdocs.yml"),
         "--site-dir", str(site)],
        cwd=config_dir, capture_output=True, text=True, timeout=300,
    )


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    done = build(ROOT, tmp_path / "site")
    assert done.returncode == 0, done.stdout + done.stderr
    assert not re.search(r"^WARNING\b", done.stderr, re.M), done.stderr
    for page in ("index.html", "architecture.html", "rules/ES101.html", "changelog.html",
                 "contributing.html", "guide/editors.html"):
        assert (tmp_path / "site" / page).is_file(), page
    changelog = (tmp_path / "site" / "changelog.html").read_text()
    assert "Unreleased" in changelog  # CHANGELOG.md is included, not copied


def test_a_broken_link_fails_the_build(tmp_path: Path) -> None:
    """Strict mode is on: the same site with one link to a missing page does not build."""
    copy = tmp_path / "copy"
    shutil.copytree(ROOT / "docs", copy / "docs")
    shutil.copytree(ROOT / "scripts", copy / "scripts")  # the hooks mkdocs.yml names
    for name in ("mkdocs.yml", "CHANGELOG.md", "CONTRIBUTING.md"):
        shutil.copy2(ROOT / name, copy / name)
    page = copy / "docs" / "guide" / "lint.md"
    page.write_text(page.read_text() + "\nSee [nowhere](no-such-page.md).\n")
    done = build(copy, tmp_path / "site")
    assert done.returncode != 0 and "no-such-page.md" in done.stdout + done.stderr


def test_the_rule_pages_are_current() -> None:
    done = subprocess.run([sys.executable, str(GENERATE), "--check"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"{done.stderr}(run: python scripts/gen_rule_docs.py)"


def test_a_stale_rule_page_is_found(tmp_path: Path) -> None:
    out = tmp_path / "rules"
    subprocess.run([sys.executable, str(GENERATE), "--out", str(out)], check=True,
                   capture_output=True, timeout=120)
    page = out / "ES101.md"
    page.write_text(page.read_text().replace("Unknown key", "Unknown keys"))
    (out / "ES999.md").write_text("a page for no rule\n")
    done = subprocess.run([sys.executable, str(GENERATE), "--check", "--out", str(out)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert "ES101.md" in done.stderr and "ES999.md" in done.stderr, done.stderr


def test_every_rule_has_its_page() -> None:
    from endstate_author.rules.registry import all_rules

    codes = {r.code for r in all_rules()}
    pages = {p.stem for p in (ROOT / "docs" / "rules").glob("ES*.md")}
    assert codes == pages
    index = (ROOT / "docs" / "rules" / "index.md").read_text()
    assert all(f"[{code}]({code}.md)" in index for code in codes)


def test_the_readme_is_for_users() -> None:
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 250
    assert "make run" in text and "make test" in text  # the quick start stays


@pytest.mark.parametrize("doc", ["README.md", "CONTRIBUTING.md", "CHANGELOG.md"])
def test_links_outside_the_site_resolve(doc: str) -> None:
    """mkdocs checks the links of docs/; these files live beside it."""
    text = (ROOT / doc).read_text()
    for target, _anchor in LINK.findall(text):
        if "://" in target:
            continue
        assert (ROOT / target).exists(), f"{doc}: link to a missing {target}"
