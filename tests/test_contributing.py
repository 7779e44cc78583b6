"""CONTRIBUTING.md's recipes are exact: each is followed here, literally, in a copy of the
repository, and the copy then works.

A recipe that forgets a file fails a newcomer three times before they find the table it did
not name; one that names a file the work does not need sends them looking for nothing. So
each test below adds a toy (a rule, a check group) by touching exactly the files its recipe
lists, in the recipe's words, then runs what the recipe says proves it (its tests, the docs
generator, the command), and finally holds the set of files that changed to the count in the
recipe's heading ("— 5 files").
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
RECIPES = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
COPIED = (
    "endstate_author",
    "harness",
    "lsp",
    "scripts/gen_rule_docs.py",
    "docs",
    "CHANGELOG.md",
    "pyproject.toml",
    "tests/__init__.py",
    "tests/conftest.py",
    "tests/support",
    "tests/rules/__init__.py",
    "tests/rules/conftest.py",
    "tests/rules/test_es6_prompt.py",
    "tests/prove/__init__.py",
    "tests/prove/conftest.py",
    "tests/prove/test_groups.py",
    "tasks/fix-help-text-wrap",
)


def files_promised(heading: str) -> int:
    """The number of files a recipe's heading promises (``## Adding a lint rule — 5 files``)."""
    found = re.search(rf"^## {re.escape(heading)} — (\d+) files?$", RECIPES, re.MULTILINE)
    assert found, f"CONTRIBUTING.md has no heading '## {heading} — N files'"
    return int(found.group(1))


def recipe(heading: str) -> str:
    start = RECIPES.index(f"## {heading}")
    end = RECIPES.find("\n## ", start + 3)
    return RECIPES[start : end if end != -1 else None]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    copy = tmp_path / "repo"
    for rel in COPIED:
        source = ROOT / rel
        if source.is_dir():
            shutil.copytree(
                source, copy / rel, ignore=shutil.ignore_patterns("__pycache__", "node_modules")
            )
        else:
            (copy / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, copy / rel)
    return copy


def snapshot(root: Path) -> dict[str, str]:
    out = {}
    for path in root.rglob("*"):
        if path.is_file() and "__pycache__" not in path.parts and ".pytest_cache" not in path.parts:
            out[path.relative_to(root).as_posix()] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def changed(before: dict[str, str], after: dict[str, str]) -> set[str]:
    return {p for p in before.keys() | after.keys() if before.get(p) != after.get(p)}


def run(repo: Path, *argv: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """A command in the copy, importing the copy's three packages (never this checkout's)."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(str(repo / p) for p in (".", "harness", "lsp")),
        "ENDSTATE_AUTHOR_CACHE": str(repo / ".cache"),
    }
    return subprocess.run(
        [sys.executable, *argv], cwd=repo, env=env, capture_output=True, text=True,
        timeout=timeout,
    )  # fmt: skip


def append(path: Path, text: str) -> None:
    path.write_text(path.read_text(encoding="utf-8") + textwrap.dedent(text), encoding="utf-8")


def changelog_line(repo: Path, line: str) -> None:
    path = repo / "CHANGELOG.md"
    text = path.read_text(encoding="utf-8")
    head = "## [Unreleased]"
    assert head in text, "CHANGELOG.md has an Unreleased section"
    at = text.index(head) + len(head)
    path.write_text(text[:at] + f"\n\n- {line}" + text[at:], encoding="utf-8")


def test_the_lint_rule_recipe_adds_a_working_rule(repo: Path) -> None:
    steps = recipe("Adding a lint rule")
    for named in ("endstate_author/rules/es<N>_<family>.py", "tests/rules/test_es<N>_<family>.py",
                  "scripts/gen_rule_docs.py", "CHANGELOG.md"):  # fmt: skip
        assert named in steps, named
    before = snapshot(repo)
    # 1. the rule, in its family's module
    append(
        repo / "endstate_author/rules/es6_prompt.py",
        '''

        @rule("ES699", "toy-shouted-description", "warning")
        def toy_shouted_description(ctx: TaskContext) -> Iterator[Diagnostic]:
            """The description is written in capitals (a toy rule: CONTRIBUTING's recipe test).

            ## What it checks
            A `description` with letters, none of them lower case.

            ## Why it matters
            It is only a toy.

            ## Example
            `"description": "FIX THE WRAP"`

            ## Fix
            Write it in sentence case.
            """
            description = ctx.data.get("description")
            if isinstance(description, str) and description.isupper():
                yield ctx.at_value("ES699", "the description is in capitals", ("description",))
        ''',
    )
    # 2. its tests, in the family's test module
    append(
        repo / "tests/rules/test_es6_prompt.py",
        """

        def test_es699_fires_on_capitals_and_not_on_the_sound_neighbour(
            make_task: TaskBuilder,
        ) -> None:
            shouted = make_task(manifest={"description": "FIX THE WRAP"})
            assert [d.code for d in lint(shouted)].count("ES699") == 1
            assert "ES699" not in [d.code for d in lint(make_task())]
        """,
    )
    # 3. and 4. the docs pages
    generated = run(repo, "scripts/gen_rule_docs.py")
    assert generated.returncode == 0, generated.stderr
    # 5. the changelog
    changelog_line(repo, "ES699 (toy-shouted-description): a toy rule.")

    after = snapshot(repo)
    assert changed(before, after) == {
        "endstate_author/rules/es6_prompt.py",
        "tests/rules/test_es6_prompt.py",
        "docs/rules/ES699.md",
        "docs/rules/index.md",
        "CHANGELOG.md",
    }
    assert len(changed(before, after)) == files_promised("Adding a lint rule")
    tested = run(repo, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                 "tests/rules/test_es6_prompt.py", "-k", "es699")  # fmt: skip
    assert tested.returncode == 0 and "1 passed" in tested.stdout, tested.stdout + tested.stderr
    shown = run(repo, "-m", "endstate_author", "rule", "ES699")
    assert shown.returncode == 0 and "written in capitals" in shown.stdout, shown.stderr
    assert "toy-shouted-description" in (repo / "docs/rules/index.md").read_text()


def test_the_prove_check_recipe_adds_a_working_check_group(repo: Path) -> None:
    steps = recipe("Adding a prove check")
    for named in ("endstate_author/prove/checks/<group>.py", "prove/checks/__init__.py",
                  "endstate_author/rules/es9_prove.py", "endstate_author/prove/messages.py",
                  "tests/prove/test_<group>.py", "docs/guide/prove.md"):  # fmt: skip
        assert named in steps, named
    before = snapshot(repo)
    # 1. the check
    (repo / "endstate_author/prove/checks/toy.py").write_text(
        textwrap.dedent(
            '''\
            """toy: the fixture is not empty (a toy group: CONTRIBUTING's recipe test)."""

            from __future__ import annotations

            from collections.abc import Iterator

            from endstate_author.prove.model import (
                Check,
                CheckGroup,
                CheckResult,
                Job,
                Plan,
                ProveContext,
                make_job,
            )
            from endstate_harness.task import Task


            def fixture_check() -> Check:
                def check(ctx: ProveContext) -> CheckResult:
                    if any(ctx.task.fixture.iterdir()):
                        return CheckResult("fixture holds files", "toy", "pass")
                    return CheckResult(
                        "fixture holds files", "toy", "fail", code="ES999",
                        detail="fixture/ is empty",
                    )

                return check


            def jobs(task: Task, _plan: Plan) -> Iterator[Job]:
                yield make_job("toy", "fixture holds files", fixture_check())


            def skipped(task: Task, _plan: Plan) -> list[CheckResult]:
                return []


            GROUP = CheckGroup(
                name="toy",
                codes=("ES999",),
                inputs=("fixture",),
                jobs=jobs,
                skipped=skipped,
                summary="the fixture holds files",
            )
            '''
        ),
        encoding="utf-8",
    )
    # 2. where it runs
    listing = repo / "endstate_author/prove/checks/__init__.py"
    text = listing.read_text(encoding="utf-8")
    assert '    "mutants",\n)' in text, "CHECK_GROUPS ends with the mutants"
    listing.write_text(text.replace('    "mutants",\n)', '    "mutants",\n    "toy",\n)'))
    # 3. its code, documented, and its finding's first words
    append(
        repo / "endstate_author/rules/es9_prove.py",
        '''
        document(
            "ES999",
            "toy-empty-fixture",
            """The fixture is empty (a toy check: CONTRIBUTING's recipe test).

            ## What it checks
            Whether fixture/ holds a file.

            ## Why it matters
            It is only a toy.

            ## Example
            An empty fixture/.

            ## Fix
            Put the project in fixture/.
            """,
        )
        ''',
    )
    messages = repo / "endstate_author/prove/messages.py"
    text = messages.read_text(encoding="utf-8")
    assert "LEADS = {\n" in text
    lead = '    "ES999": "the fixture is empty",\n'
    messages.write_text(text.replace("LEADS = {\n", "LEADS = {\n" + lead, 1))
    # 4. its tests
    (repo / "tests/prove/test_toy.py").write_text(
        textwrap.dedent(
            '''\
            import json
            import subprocess
            import sys
            from pathlib import Path

            ROOT = Path(__file__).resolve().parents[2]


            def test_toy_passes_on_a_shipped_task() -> None:
                proc = subprocess.run(
                    [sys.executable, "-m", "endstate_author", "prove",
                     str(ROOT / "tasks/fix-help-text-wrap"), "--only", "toy",
                     "--sandbox", "local", "--no-cache", "-o", "json", "--quiet"],
                    capture_output=True, text=True, timeout=300,
                )
                report = json.loads(proc.stdout)
                [task] = report["tasks"]
                checks = [(c["check"], c["outcome"]) for c in task["checks"]]
                assert checks == [("fixture holds files", "pass")]
            '''
        ),
        encoding="utf-8",
    )
    # 5. and 6. the docs pages
    generated = run(repo, "scripts/gen_rule_docs.py")
    assert generated.returncode == 0, generated.stderr
    guide = repo / "docs/guide/prove.md"
    guide.write_text(guide.read_text(encoding="utf-8") + "\n- `toy`: the fixture holds files.\n")
    # 7. the changelog
    changelog_line(repo, "prove --only toy: a toy check group.")

    after = snapshot(repo)
    assert changed(before, after) == {
        "endstate_author/prove/checks/toy.py",
        "endstate_author/prove/checks/__init__.py",
        "endstate_author/rules/es9_prove.py",
        "endstate_author/prove/messages.py",
        "tests/prove/test_toy.py",
        "docs/rules/ES999.md",
        "docs/rules/index.md",
        "docs/guide/prove.md",
        "CHANGELOG.md",
    }
    assert len(changed(before, after)) == files_promised("Adding a prove check")
    tested = run(repo, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                 "tests/prove/test_toy.py", "tests/prove/test_groups.py")  # fmt: skip
    assert tested.returncode == 0, tested.stdout[-3000:] + tested.stderr[-3000:]
    proved = run(repo, "-m", "endstate_author", "prove", "tasks/fix-help-text-wrap", "--only",
                 "toy", "--sandbox", "local", "--no-cache", "-o", "json", "--quiet")  # fmt: skip
    report = json.loads(proved.stdout)
    assert [c["outcome"] for c in report["tasks"][0]["checks"]] == ["pass"], proved.stderr
