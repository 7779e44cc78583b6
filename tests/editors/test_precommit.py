"""The pre-commit hooks, run by the real ``pre-commit`` from PyPI against this checkout.

pre-commit installs a hook repository from git, so the test first snapshots the working tree
(tracked and new files, minus what .gitignore drops) into a temporary git repository: that
tests the hooks as they are now, committed or not (``try-repo`` on the checkout itself would
see only committed and modified-tracked files). The hook environment is a real virtualenv
with this package pip-installed into it, under a temporary PRE_COMMIT_HOME, so the user's
pre-commit cache is never touched.

Then a temporary git repository of tasks gets the hook installed, and ``git commit`` is the
gate: a commit with a defective task is refused with the finding printed, the fixed commit
goes through, and a task that is not touched is not linted. The configuration the
documentation gives (README.md and docs/guide/pre-commit.md) runs verbatim: git is told to
fetch its address from the snapshot, tagged with the ``rev`` it pins.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import yaml

from endstate_author import __version__
from endstate_author.lint.run import lint_paths
from tests.rules.conftest import TaskBuilder, good
from tests.support.snippets import fenced

ROOT = Path(__file__).resolve().parents[2]
PRE_COMMIT = Path(sys.executable).parent / "pre-commit"

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


def git(cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, check=check, timeout=300
    )


def clean_env(home: Path) -> dict[str, str]:
    """No user or system git config, hooks or templates leak in; pre-commit's cache is ours."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "PRE_COMMIT"))}
    env.update(
        PRE_COMMIT_HOME=str(home / "pre-commit-cache"),
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=str(home / "gitconfig"),
        GIT_AUTHOR_NAME="t",
        GIT_AUTHOR_EMAIL="t@example.invalid",
        GIT_COMMITTER_NAME="t",
        GIT_COMMITTER_EMAIL="t@example.invalid",
    )
    (home / "gitconfig").write_text("[init]\n\tdefaultBranch = main\n")
    return env


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not PRE_COMMIT.exists():
        print("SKIP REASON: pre-commit is not installed in the venv (pip install -e '.[dev]')")
        pytest.skip("pre-commit is not installed in the venv")
    if shutil.which("git") is None:
        print("SKIP REASON: git is not installed")
        pytest.skip("git is not installed")
    return tmp_path_factory.mktemp("precommit-home")


@pytest.fixture(scope="module")
def hook_repo(home: Path) -> tuple[Path, str]:
    """A git snapshot of this checkout's working tree (the tasks/ suite left out: not needed)."""
    env = clean_env(home)
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    snap = home / "hook-repo"
    for rel in filter(None, listed.split("\0")):
        if rel.startswith(("tasks/", "bench/")):
            continue
        src = ROOT / rel
        if not src.is_file():
            continue  # deleted in the working tree but still in the index
        dest = snap / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dest)
    subprocess.run(["git", "init", "-q"], cwd=snap, env=env, check=True)
    subprocess.run(["git", "add", "-A"], cwd=snap, env=env, check=True)
    subprocess.run(["git", "commit", "-q", "-m", "snapshot"], cwd=snap, env=env, check=True)
    rev = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=snap, env=env, capture_output=True, text=True, check=True
    ).stdout.strip()
    return snap, rev


@pytest.fixture
def task_repo(home: Path, hook_repo: tuple[Path, str], tmp_path: Path) -> Iterator[Path]:
    env = clean_env(home)
    work = tmp_path / "work"
    build = TaskBuilder(work / "tasks")
    build(good(id="alpha"))
    build(good(id="beta"))
    snap, rev = hook_repo
    (work / ".pre-commit-config.yaml").write_text(
        f"repos:\n  - repo: {snap}\n    rev: {rev}\n    hooks:\n      - id: endstate-author-lint\n"
    )
    subprocess.run(["git", "init", "-q"], cwd=work, env=env, check=True)
    subprocess.run([str(PRE_COMMIT), "install"], cwd=work, env=env, check=True, timeout=60)
    yield work


def run(cwd: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        list(args), cwd=cwd, env=clean_env(home), capture_output=True, text=True, timeout=600
    )


def break_manifest(task: Path) -> str:
    """Introduce a typo the linter must refuse; return the code lint gives it (not guessed)."""
    manifest = task / "task.json"
    manifest.write_text(manifest.read_text().replace('"max_steps"', '"max_step"'))
    found = [d for d in lint_paths([task], isolated=True).diagnostics if d.severity == "error"]
    assert found, "the planted typo must be an error for this test to mean anything"
    return found[0].code


def test_commit_with_defect_is_refused_and_fixed_commit_passes(task_repo: Path, home: Path) -> None:
    work = task_repo
    assert run(work, home, "git", "add", "-A").returncode == 0
    first = run(work, home, "git", "commit", "-m", "two sound tasks")
    assert first.returncode == 0, first.stdout + first.stderr
    assert "endstate-author lint" in first.stdout + first.stderr

    code = break_manifest(work / "tasks" / "alpha")
    run(work, home, "git", "add", "-A")
    refused = run(work, home, "git", "commit", "-m", "typo")
    out = refused.stdout + refused.stderr
    assert refused.returncode != 0, out
    assert code in out and "max_step" in out, out
    assert "tasks/alpha/task.json" in out, out
    assert "tasks/beta" not in out, out  # only the changed task is linted
    head = run(work, home, "git", "log", "--oneline").stdout.splitlines()
    assert len(head) == 1, "the refused commit must not exist"

    manifest = work / "tasks" / "alpha" / "task.json"
    fixed_text = manifest.read_text().replace('"max_step"', '"max_steps"')
    manifest.write_text(fixed_text.replace('"max_steps": 20', '"max_steps": 15'))
    run(work, home, "git", "add", "-A")
    fixed = run(work, home, "git", "commit", "-m", "fixed")
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert len(run(work, home, "git", "log", "--oneline").stdout.splitlines()) == 2


def test_untouched_broken_task_does_not_block_other_tasks(task_repo: Path, home: Path) -> None:
    work = task_repo
    break_manifest(work / "tasks" / "beta")
    run(work, home, "git", "add", "-A")
    forced = run(work, home, "git", "commit", "--no-verify", "-m", "beta broken, hook skipped")
    assert forced.returncode == 0, forced.stderr
    core = work / "tasks" / "alpha" / "solution" / "chunker" / "core.py"
    core.write_text(core.read_text() + "# tidy\n")
    run(work, home, "git", "add", "-A")
    other = run(work, home, "git", "commit", "-m", "change alpha only")
    assert other.returncode == 0, other.stdout + other.stderr
    # a passing hook's output is hidden; --verbose shows which tasks it linted
    shown = run(
        work,
        home,
        str(PRE_COMMIT),
        "run",
        "endstate-author-lint",
        "--verbose",
        "--files",
        "tasks/alpha/solution/chunker/core.py",
    )
    assert shown.returncode == 0, shown.stdout + shown.stderr
    assert "1 task(s): tasks/alpha" in shown.stdout + shown.stderr
    prompt = work / "tasks" / "beta" / "prompt.md"
    prompt.write_text(prompt.read_text() + "More detail.\n")
    run(work, home, "git", "add", "-A")
    touched = run(work, home, "git", "commit", "-m", "touch beta")
    assert touched.returncode != 0 and "max_step" in touched.stdout + touched.stderr


def test_try_repo_reports_the_finding(task_repo: Path, home: Path, hook_repo: tuple[Path, str]):
    """The documented way to try the hook before adding it: ``pre-commit try-repo``."""
    work = task_repo
    code = break_manifest(work / "tasks" / "beta")
    snap, rev = hook_repo
    result = run(
        work,
        home,
        str(PRE_COMMIT),
        "try-repo",
        str(snap),
        "endstate-author-lint",
        "--ref",
        rev,
        "--files",
        "tasks/beta/task.json",
        "tasks/alpha/prompt.md",
    )
    out = result.stdout + result.stderr
    assert result.returncode == 1, out
    assert code in out and "tasks/beta/task.json" in out, out
    assert "2 task(s): tasks/alpha, tasks/beta" in out, out


DOCS = [ROOT / "README.md", ROOT / "docs" / "guide" / "pre-commit.md"]
SHIPPED_TASK = "fix-help-text-wrap"


def documented_config(doc: Path) -> str:
    return fenced(doc, "yaml", "endstate-author-lint")


def test_the_documented_configuration_is_one_and_pins_this_version() -> None:
    configs = {documented_config(doc) for doc in DOCS}
    assert len(configs) == 1, configs
    [repo] = yaml.safe_load(configs.pop())["repos"]
    assert repo["rev"] == f"v{__version__}"  # a version bump must move the documented tag
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    assert {h["id"] for h in repo["hooks"]} == {h["id"] for h in hooks}


def test_the_documented_configuration_runs_verbatim(
    home: Path, hook_repo: tuple[Path, str], tmp_path: Path
) -> None:
    config = documented_config(DOCS[-1])  # the same as README.md's (the test above)
    [repo] = yaml.safe_load(config)["repos"]
    snap, rev = hook_repo
    env = clean_env(home)
    subprocess.run(["git", "tag", "-f", repo["rev"], rev], cwd=snap, env=env, check=True)
    # git (and so pre-commit, which keeps these variables) fetches the address from the snapshot
    env.update(GIT_CONFIG_COUNT="1", GIT_CONFIG_KEY_0=f"url.{snap}.insteadOf",
               GIT_CONFIG_VALUE_0=repo["repo"])
    env["ENDSTATE_AUTHOR_CACHE"] = str(tmp_path / "prove-cache")
    work, sh, first = _first_commit(tmp_path, env, config)
    out = first.stdout + first.stderr
    assert first.returncode == 0, out
    assert "endstate-author lint (changed tasks)" in out and "endstate-author prove" in out, out
    assert out.count("Passed") == 2, out  # both hooks ran on the task, and both passed

    manifest = work / "tasks" / SHIPPED_TASK / "task.json"
    sound = manifest.read_text()
    manifest.write_text(sound.replace('"max_steps"', '"max_step"', 1))
    sh("git", "add", "-A")
    refused = sh("git", "commit", "-m", "typo")
    out = refused.stdout + refused.stderr
    assert refused.returncode != 0, out
    assert "ES101" in out and f"tasks/{SHIPPED_TASK}/task.json" in out, out

    manifest.write_text(sound.replace('"max_steps": 20', '"max_steps": 15', 1))
    sh("git", "add", "-A")
    fixed = sh("git", "commit", "-m", "fixed")
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr


def test_a_commit_hash_pins_the_hooks_from_a_clone_without_tags(
    home: Path, hook_repo: tuple[Path, str], tmp_path: Path
) -> None:
    """Issue 46 item 7: tags do not travel with every clone. The documented configuration
    with `rev:` the commit hash, against a clone that holds no tag at all, installs and runs
    the hooks (as the guide says to pin one)."""
    snap, rev = hook_repo
    env = clean_env(home)
    clone = tmp_path / "clone-without-tags"
    cloned = subprocess.run(["git", "clone", "-q", "--no-tags", str(snap), str(clone)],
                            env=env, capture_output=True, text=True)
    assert cloned.returncode == 0, cloned.stderr
    tags = subprocess.run(["git", "tag"], cwd=clone, env=env, capture_output=True, text=True)
    assert tags.stdout.strip() == ""
    [repo] = yaml.safe_load(documented_config(DOCS[-1]))["repos"]
    config = (f"repos:\n  - repo: {clone}\n    rev: {rev}\n    hooks:\n"
              f"      - id: {repo['hooks'][0]['id']}\n")
    _, _, first = _first_commit(tmp_path, env, config)
    out = first.stdout + first.stderr
    assert first.returncode == 0 and "Passed" in out, out


Shell = Callable[..., subprocess.CompletedProcess[str]]


def _first_commit(
    tmp_path: Path, env: dict[str, str], config: str
) -> tuple[Path, Shell, subprocess.CompletedProcess[str]]:
    """A repository of one shipped task with ``config`` installed by the real pre-commit, and
    its first commit: (the repository, a shell in it, what the commit printed)."""
    work = tmp_path / "work"
    shutil.copytree(ROOT / "tasks" / SHIPPED_TASK, work / "tasks" / SHIPPED_TASK)
    (work / ".pre-commit-config.yaml").write_text(config, encoding="utf-8")

    def sh(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(list(args), cwd=work, env=env, capture_output=True, text=True,
                              timeout=600)

    assert sh("git", "init", "-q").returncode == 0
    installed = sh(str(PRE_COMMIT), "install")
    assert installed.returncode == 0, installed.stdout + installed.stderr
    sh("git", "add", "-A")
    return work, sh, sh("git", "commit", "-m", "a shipped task")
