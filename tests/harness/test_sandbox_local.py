"""The tree utilities, the TreeSandbox file API and LocalSandbox, on real folders and processes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from endstate_harness.sandbox import tree
from endstate_harness.sandbox.base import PathEscapeError, SandboxError, defer_signals
from endstate_harness.sandbox.local import LocalSandbox
from endstate_harness.sandbox.snapshot import read_snapshot
from tests.conftest import make_fixture_tree
from tests.support import procs

HARNESS = Path(__file__).resolve().parents[2] / "harness"


# ----------------------------------------------------------------------------- confine


@pytest.mark.parametrize(
    "rel",
    [
        "../outside.txt",
        "pkg/../../outside.txt",
        "/etc/passwd",
        "abs_link/passwd",
        "abs_link",
        "up_link/outside.txt",
        "chain/outside.txt",
        "nul\0byte",
        "loop/x",
    ],
)
def test_confine_refuses_escapes(tmp_path: Path, rel: str) -> None:
    root = tmp_path / "root"
    (root / "pkg").mkdir(parents=True)
    (tmp_path / "outside.txt").write_text("secret")
    os.symlink("/etc", root / "abs_link")
    os.symlink("..", root / "up_link")
    os.symlink("pkg/../up_link", root / "chain")  # escapes only through a second link
    os.symlink("loop", root / "loop")
    with pytest.raises(PathEscapeError):
        tree.confine(root, rel)


def test_confine_resolves_inside_links_and_dotdot(tmp_path: Path) -> None:
    root = make_fixture_tree(tmp_path / "root")
    real = Path(os.path.realpath(root))
    assert tree.confine(root, "pkg/../pkg/calc.py") == real / "pkg" / "calc.py"
    assert tree.confine(root, "calc_link.py") == real / "pkg" / "calc.py"
    assert tree.confine(root, "new/dir/file.txt") == real / "new" / "dir" / "file.txt"
    assert tree.confine(root, ".") == real
    os.symlink("pkg", root / "pkg_link")
    assert tree.confine(root, "pkg_link/../README.md") == real / "README.md"


# ----------------------------------------------------------------------------- copying


def test_copy_tree_prunes_every_level_and_keeps_links(tmp_path: Path, fixture_tree: Path) -> None:
    (fixture_tree / "pkg" / ".venv").mkdir()
    (fixture_tree / "pkg" / ".venv" / "x").write_text("x")
    dst = tmp_path / "copy"
    tree.copy_tree(fixture_tree, dst)
    names = {p.relative_to(dst).as_posix() for p in dst.rglob("*")}
    assert not any(part in tree.PRUNED_NAMES for n in names for part in n.split("/"))
    assert "pkg/calc.py" in names and "data.bin" in names
    assert (dst / "calc_link.py").is_symlink()
    assert os.readlink(dst / "calc_link.py") == "pkg/calc.py"
    assert os.access(dst / "run.sh", os.X_OK)
    assert (dst / "data.bin").read_bytes() == bytes(range(256))


@pytest.mark.parametrize("target", ["/etc/passwd", "../../outside", "sub/../../../x"])
def test_copy_tree_refuses_links_leaving_the_source(
    tmp_path: Path, fixture_tree: Path, target: str
) -> None:
    os.symlink(target, fixture_tree / "pkg" / "bad")
    with pytest.raises(PathEscapeError, match="points outside"):
        tree.copy_tree(fixture_tree, tmp_path / "copy")


def test_copy_tree_refuses_special_files(tmp_path: Path, fixture_tree: Path) -> None:
    os.mkfifo(fixture_tree / "pipe")
    with pytest.raises(SandboxError, match="fifo"):
        tree.copy_tree(fixture_tree, tmp_path / "copy")


def test_overlay_replaces_links_never_writes_through_them(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("host file")
    live = tmp_path / "live"
    live.mkdir()
    os.symlink(str(outside), live / "tests")  # planted by an agent
    os.symlink(str(outside / "keep.txt"), live / "README.md")
    holdout = tmp_path / "holdout"
    (holdout / "tests").mkdir(parents=True)
    (holdout / "tests" / "keep.txt").write_text("holdout")
    (holdout / "README.md").write_text("readme")
    tree.overlay_tree(holdout, live)
    assert (outside / "keep.txt").read_text() == "host file"
    assert (
        not (live / "tests").is_symlink() and (live / "tests" / "keep.txt").read_text() == "holdout"
    )
    assert not (live / "README.md").is_symlink()
    assert (live / "README.md").read_text() == "readme"


# ----------------------------------------------------------------------------- hashing, reading


def test_hash_tree_is_content_only(tmp_path: Path, fixture_tree: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    tree.copy_tree(fixture_tree, a)
    time.sleep(0.01)
    tree.copy_tree(fixture_tree, b)
    assert tree.hash_tree(a) == tree.hash_tree(b) == tree.hash_tree(fixture_tree)
    os.utime(a / "README.md", (1, 1))
    (a / "pkg" / "__pycache__").mkdir()
    (a / "pkg" / "__pycache__" / "new.pyc").write_bytes(b"x")
    assert tree.hash_tree(a) == tree.hash_tree(b), "mtimes and pruned names are not content"
    (a / "README.md").chmod(0o755)
    assert tree.hash_tree(a) != tree.hash_tree(b), "the executable bit is content"
    (a / "README.md").chmod(0o644)
    os.unlink(a / "calc_link.py")
    os.symlink("README.md", a / "calc_link.py")
    assert tree.hash_tree(a) != tree.hash_tree(b), "a link's target is content"


def test_text_files_skips_binary_pruned_and_links(fixture_tree: Path) -> None:
    files = tree.text_files(fixture_tree)
    assert files["pkg/calc.py"].startswith("def add")
    assert "data.bin" not in files
    assert "calc_link.py" not in files
    assert not any(k.startswith((".git/", "node_modules/")) or "__pycache__" in k for k in files)
    assert sorted(files) == sorted(
        ["README.md", "pkg/__init__.py", "pkg/calc.py", "run.sh", "tests/test_calc.py"]
    )


# ----------------------------------------------------------------------------- TreeSandbox


def test_sandbox_lifecycle_never_touches_the_fixture(tmp_path: Path, fixture_tree: Path) -> None:
    before = tree.hash_tree(fixture_tree, prune=frozenset())
    with LocalSandbox(fixture_tree, scratch_root=tmp_path / "scratch") as sb:
        scratch = sb.scratch
        sb.write_text("pkg/calc.py", "changed")
        assert sb.run("rm -f README.md && echo x > new.txt").ok
        sb.stage(fixture_tree)  # an overlay with the very same folder
        ro = sb.live / "ro"
        ro.mkdir()
        (ro / "f").write_text("x")
        ro.chmod(0o500)  # a read-only folder left behind must not block cleanup
    assert not scratch.exists()
    assert tree.hash_tree(fixture_tree, prune=frozenset()) == before
    sb.close()  # idempotent


def test_the_fixture_snapshot_is_that_of_a_pruned_copy(tmp_path: Path, fixture_tree: Path) -> None:
    """The pristine fixture is read from the task's folder (no second copy is made): it must
    hold exactly the entries, bytes, links and executable bits a pruned copy holds, so the
    unchanged-file and changed-path graders see what they saw when a copy was read."""
    copy = tmp_path / "copy"
    tree.copy_tree(fixture_tree, copy)
    expected = read_snapshot(copy)
    linked = tmp_path / "linked-fixture"
    os.symlink(fixture_tree, linked)  # a task whose fixture/ is a link to its folder
    for source in (fixture_tree, linked):
        with LocalSandbox(source, scratch_root=tmp_path / "scratch") as sb:
            assert sorted(p.name for p in sb.scratch.iterdir()) == ["home", "live", "tmp"]
            snapshot = sb._fixture_snapshot
            assert snapshot is not None and snapshot.entries == expected.entries  # bits, links
            assert sb.fixture_files() == {
                rel: e.data for rel, e in expected.entries.items() if e.kind == "f"
            }
            assert sb.changed_paths() == []
            assert sb.fixture_text("run.sh") == "#!/bin/sh\necho run\n"
            assert sb.fixture_text(".git/HEAD") == ""  # pruned, as in the copy


def test_sandbox_cleans_up_when_the_block_raises(fixture_tree: Path) -> None:
    scratch: Path | None = None
    with pytest.raises(RuntimeError, match="boom"), LocalSandbox(fixture_tree) as sb:
        scratch = sb.scratch
        raise RuntimeError("boom")
    assert scratch is not None and not scratch.exists()


def test_missing_fixture_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(SandboxError, match="fixture is missing"):
        LocalSandbox(tmp_path / "nope").setup()


def test_sandbox_paths_are_confined(fixture_tree: Path) -> None:
    with LocalSandbox(fixture_tree) as sb:
        os.symlink("/etc", sb.live / "etc_link")
        for bad in ("../x", "/etc/passwd", "etc_link/passwd", "pkg/../../x"):
            with pytest.raises(PathEscapeError):
                sb.read_text(bad)
            with pytest.raises(PathEscapeError):
                sb.write_text(bad, "x")
            with pytest.raises(PathEscapeError):
                sb.exists(bad)
            if "link" not in bad:  # the link lives in the live tree only
                with pytest.raises(PathEscapeError):
                    sb.fixture_text(bad)
        assert sb.read_text("calc_link.py") == sb.read_text("pkg/calc.py")
        assert sb.read_text("missing.txt") == "" and not sb.exists("missing.txt")
        assert ".git" not in os.listdir(sb.live) and "node_modules" not in os.listdir(sb.live)


def test_changed_paths_adds_edits_deletes_binary_and_links(fixture_tree: Path) -> None:
    with LocalSandbox(fixture_tree) as sb:
        assert sb.changed_paths() == []
        sb.write_text("pkg/calc.py", "def add(a, b):\n    return a + b\n")
        sb.write_text("docs/new.md", "new")
        (sb.live / "README.md").unlink()
        (sb.live / "data.bin").write_bytes(b"\xff\xfe")
        (sb.live / "calc_link.py").unlink()
        os.symlink("README.md", sb.live / "calc_link.py")
        (sb.live / "pkg" / "__pycache__").mkdir(exist_ok=True)
        (sb.live / "pkg" / "__pycache__" / "z.pyc").write_bytes(b"z")
        expected = ["README.md", "calc_link.py", "data.bin", "docs/new.md", "pkg/calc.py"]
        # Every file counts until the seal, which deletes compiled caches (never ignores them).
        assert sb.changed_paths() == sorted([*expected, "pkg/__pycache__/z.pyc"])
        sb.seal()
        assert sb.changed_paths() == expected
        assert sb.fixture_text("pkg/calc.py").endswith("a - b\n")


def test_seal_snapshots_the_end_state(fixture_tree: Path, tmp_path: Path) -> None:
    holdout = tmp_path / "holdout"
    (holdout / "tests").mkdir(parents=True)
    (holdout / "tests" / "test_hidden.py").write_text("def test_hidden():\n    pass\n")
    (holdout / "README.md").write_text("holdout readme\n")
    with LocalSandbox(fixture_tree) as sb:
        sb.write_text("pkg/calc.py", "def add(a, b):\n    return a + b\n")
        live_hash = sb.tree_hash()
        sealed = sb.seal()
        assert sealed == live_hash == sb.seal()
        sb.stage(holdout)
        sb.run("echo side-effect > out.txt")
        # The grader-facing API answers from the snapshot ...
        assert sb.tree_hash() == sealed
        assert not sb.exists("tests/test_hidden.py") and not sb.exists("out.txt")
        assert sb.read_text("README.md") == "# calc\n"
        assert "tests/test_hidden.py" not in sb.end_state_files()
        assert sb.changed_paths() == ["pkg/calc.py"]
        # ... while commands run on a fresh copy of it, holdout included, and nothing one
        # grading command leaves behind reaches the next.
        result = sb.run("cat tests/test_hidden.py README.md")
        assert (
            result.ok and "def test_hidden" in result.stdout and "holdout readme" in result.stdout
        )
        assert not sb.run("cat out.txt").ok


def test_tree_hash_is_stable_across_sandboxes(fixture_tree: Path) -> None:
    with LocalSandbox(fixture_tree) as a, LocalSandbox(fixture_tree) as b:
        assert a.tree_hash() == b.tree_hash() == a.seal()
        b.write_text("README.md", "# calc\n")  # same bytes: same hash
        assert a.tree_hash() == b.tree_hash()
        b.write_text("README.md", "other")
        assert a.tree_hash() != b.tree_hash()


# ----------------------------------------------------------------------------- LocalSandbox.run


def test_run_has_a_clean_deterministic_env(
    fixture_tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ENDSTATE_TEST_SECRET", "hunter2")
    with LocalSandbox(fixture_tree) as sb:
        result = sb.run("env; pwd; python3 -c 'print(hash(\"abc\"))'")
        assert result.ok, result.output
        env = dict(line.split("=", 1) for line in result.stdout.splitlines() if "=" in line)
        assert "hunter2" not in result.stdout
        assert env["PYTHONDONTWRITEBYTECODE"] == "1" and env["PYTHONHASHSEED"] == "0"
        assert env["HOME"] == str(sb.home) and env["LANG"] == "C.UTF-8"
        assert set(env) <= {
            "PATH",
            "HOME",
            "LANG",
            "LC_ALL",
            "PYTHONDONTWRITEBYTECODE",
            "PYTHONHASHSEED",
            "PWD",
            "SHLVL",
            "_",
            "OLDPWD",
        }
        assert str(Path(os.path.realpath(sb.live))) in result.stdout
        again = sb.run("python3 -c 'print(hash(\"abc\"))'")
        assert again.stdout.strip() == result.stdout.strip().splitlines()[-1]
        failed = sb.run("echo oops >&2; exit 3")
        assert failed.exit_code == 3 and failed.stderr == "oops\n" and not failed.ok


def test_timeout_kills_the_whole_group(fixture_tree: Path, walls: bool) -> None:
    mark = procs.token()
    with LocalSandbox(fixture_tree, walls=walls) as sb:
        began = time.monotonic()
        result = sb.run(f"sleep {mark} & sleep 30", timeout_s=1)
        elapsed = time.monotonic() - began
        assert result.timed_out and result.exit_code == 124 and not result.ok
        assert elapsed < 20, "the 1 s timeout did not end a 30 s command"
        assert procs.gone(mark)


def test_a_timed_out_command_is_gone_when_run_returns(fixture_tree: Path, walls: bool) -> None:
    """Nothing is waited for afterwards: when run returns, the command's processes are gone
    (or zombies), also one that left the group with setsid and, behind the walls, those of
    its PID namespace, which the kernel kills only once the namespace's process 1 is gone."""
    plain, escaped = procs.token(), procs.token()
    with LocalSandbox(fixture_tree, walls=walls) as sb:
        try:
            result = sb.run(f"sleep {plain} & setsid sleep {escaped} & sleep 30", timeout_s=1)
            assert result.timed_out
            assert procs.marked(plain) == [] and procs.marked(escaped) == []
        finally:
            procs.kill_marked(plain)
            procs.kill_marked(escaped)


def test_background_child_does_not_outlive_its_command(fixture_tree: Path, walls: bool) -> None:
    mark = procs.token()
    with LocalSandbox(fixture_tree, walls=walls) as sb:
        began = time.monotonic()
        result = sb.run(f"sleep {mark} & echo started")
        assert result.ok and time.monotonic() - began < 3
        assert procs.gone(mark)


def test_output_is_capped(fixture_tree: Path) -> None:
    with LocalSandbox(fixture_tree, output_cap=1000) as sb:
        result = sb.run("head -c 100000 /dev/zero | tr '\\0' a; echo tail >&2")
        assert result.stdout.startswith("a" * 1000)
        assert "99000 more bytes dropped" in result.stdout
        assert result.stderr == "tail\n"


def test_ctrl_c_during_run_kills_the_group(fixture_tree: Path) -> None:
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("SIGALRM can only interrupt the main thread")
    mark = procs.token()
    with LocalSandbox(fixture_tree) as sb:

        def interrupt(_signum: int, _frame: object) -> None:
            raise KeyboardInterrupt

        old = signal.signal(signal.SIGALRM, interrupt)
        signal.setitimer(signal.ITIMER_REAL, 0.5)
        try:
            with pytest.raises(KeyboardInterrupt):
                sb.run(f"sleep {mark} & sleep 30")
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old)
        assert procs.gone(mark)


def test_sigterm_removes_the_scratch_folder(fixture_tree: Path, tmp_path: Path) -> None:
    script = textwrap.dedent(
        f"""
        import sys
        from pathlib import Path
        sys.path.insert(0, {str(HARNESS)!r})
        from endstate_harness.sandbox.local import LocalSandbox
        sb = LocalSandbox(Path({str(fixture_tree)!r}))
        sb.setup()
        print(sb.scratch, flush=True)
        sb.run("sleep 60")
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    scratch = Path(proc.stdout.readline().strip())
    assert scratch.is_dir()
    time.sleep(0.3)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=10) == 128 + signal.SIGTERM
    assert not scratch.exists()


def test_sandboxes_run_in_parallel_threads(fixture_tree: Path) -> None:
    results: dict[int, str] = {}
    errors: list[BaseException] = []

    def work(n: int) -> None:
        try:
            with LocalSandbox(fixture_tree) as sb:
                sb.write_text("n.txt", str(n))
                results[n] = sb.run("sleep 0.2; cat n.txt").stdout
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(6)]
    began = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert results == {n: str(n) for n in range(6)}
    assert time.monotonic() - began < 6 * 0.2 + 2


def test_exit_watch_without_pidfd(fixture_tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The portable path (a WNOWAIT waiter thread) used where pidfd_open does not exist."""

    def no_pidfd(_pid: int) -> int:
        raise OSError("pidfd_open unavailable")

    monkeypatch.setattr(os, "pidfd_open", no_pidfd)
    mark = procs.token()
    with LocalSandbox(fixture_tree) as sb:
        result = sb.run(f"sleep {mark} & echo done >&2")
        assert result.ok and result.stderr == "done\n"
        assert procs.gone(mark)
        assert sb.run("sleep 30", timeout_s=0.5).timed_out


def test_a_process_escaping_the_group_does_not_hang_run(fixture_tree: Path, walls: bool) -> None:
    """setsid leaves the group: without walls it outlives the command (a documented limit),
    but run still returns; behind the walls it dies with the command's PID namespace."""
    mark = procs.token()
    with LocalSandbox(fixture_tree, walls=walls) as sb:
        began = time.monotonic()
        result = sb.run(f"setsid sleep {mark} & echo started")
        try:
            assert result.ok and time.monotonic() - began < 5
            if walls:
                assert procs.gone(mark), "a setsid escape outlived a walled command"
        finally:
            procs.kill_marked(mark)


# ----------------------------------------------------------------------------- deferred signals
# Real signals sent to this process at the exact moment that used to leak: each would leave a
# folder or a process behind without ``defer_signals`` around the critical section.


def _main_thread_only() -> None:
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("Python runs signal handlers only in the main thread")


def _spin(seconds: float = 0.05) -> None:
    """Bytecodes to run: a pending signal's handler would run here if it were not deferred."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


def test_defer_signals_holds_sigint_until_the_section_ends() -> None:
    _main_thread_only()
    before = signal.getsignal(signal.SIGINT)
    reached: list[str] = []
    with pytest.raises(KeyboardInterrupt):
        with defer_signals():
            os.kill(os.getpid(), signal.SIGINT)
            _spin()
            reached.append("end of the section")
    assert reached == ["end of the section"]
    assert signal.getsignal(signal.SIGINT) is before


def test_defer_signals_delivers_sigterm_to_the_handler_it_restores() -> None:
    _main_thread_only()
    seen: list[int] = []

    def handler(signum: int, _frame: object) -> None:
        seen.append(signum)
        raise SystemExit(128 + signum)

    old = signal.signal(signal.SIGTERM, handler)
    try:
        with pytest.raises(SystemExit) as info:
            with defer_signals():
                os.kill(os.getpid(), signal.SIGTERM)
                _spin()
                assert seen == []
        assert info.value.code == 128 + signal.SIGTERM and seen == [signal.SIGTERM]
        assert signal.getsignal(signal.SIGTERM) is handler
        with defer_signals():  # nothing pending: nothing raised
            _spin(0.01)
    finally:
        signal.signal(signal.SIGTERM, old)


def test_a_signal_during_the_exit_sweep_does_not_cut_it_short(tmp_path: Path) -> None:
    # CI once saw a SIGTERM land while the exit sweep waited for a warm interpreter: the
    # SystemExit was "ignored in atexit callback" and the zygote's folder stayed behind.
    script = textwrap.dedent(
        f"""
        import os, signal, sys, time
        sys.path.insert(0, {str(HARNESS)!r})
        from endstate_harness.process.cleanup import OPEN_SANDBOXES

        signal.signal(signal.SIGTERM, lambda n, f: (_ for _ in ()).throw(SystemExit(128 + n)))

        class Box:
            def __init__(self, name):
                self.name = name
            def close(self):
                if self.name == "first":
                    os.kill(os.getpid(), signal.SIGTERM)
                    end = time.monotonic() + 0.2
                    while time.monotonic() < end:
                        pass
                open({str(tmp_path)!r} + "/" + self.name, "w").close()

        OPEN_SANDBOXES.add(Box("first"))
        OPEN_SANDBOXES.add(Box("second"))
        """
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=30)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["first", "second"], proc.stderr
    assert "Traceback" not in proc.stderr and proc.returncode == 0, proc.stderr


def test_defer_signals_does_nothing_off_the_main_thread() -> None:
    inside: list[object] = []

    def work() -> None:
        with defer_signals():
            inside.append(signal.getsignal(signal.SIGINT))

    thread = threading.Thread(target=work)
    thread.start()
    thread.join()
    assert inside == [signal.getsignal(signal.SIGINT)]


def test_interrupt_right_after_mkdtemp_leaves_no_folder(
    fixture_tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _main_thread_only()
    real_mkdtemp = tempfile.mkdtemp
    made: list[str] = []

    def mkdtemp_then_ctrl_c(*args: Any, **kwargs: Any) -> str:
        folder = real_mkdtemp(*args, **kwargs)
        made.append(folder)
        os.kill(os.getpid(), signal.SIGINT)
        _spin()  # without the deferral KeyboardInterrupt is raised here: the folder is lost
        return folder

    monkeypatch.setattr(tempfile, "mkdtemp", mkdtemp_then_ctrl_c)
    sb = LocalSandbox(fixture_tree, scratch_root=tmp_path / "scratch")
    with pytest.raises(KeyboardInterrupt):
        sb.setup()
    monkeypatch.undo()
    assert made and not os.path.exists(made[0])
    assert list((tmp_path / "scratch").iterdir()) == []
    assert sb._scratch is None


class _CtrlCDuringClose(LocalSandbox):
    """Ctrl-C arrives while the backend stops: the moment ``close()`` used to lose the folder."""

    fired = False

    def _close_backend(self) -> None:
        if not self.fired:
            self.fired = True
            os.kill(os.getpid(), signal.SIGINT)
            _spin()


def test_interrupt_during_close_still_removes_the_folder(fixture_tree: Path) -> None:
    _main_thread_only()
    sb = _CtrlCDuringClose(fixture_tree)
    sb.setup()
    scratch = sb.scratch
    with pytest.raises(KeyboardInterrupt):
        sb.close()
    assert not scratch.exists(), "the folder was forgotten before it was removed"
    assert sb._scratch is None
    sb.close()  # still idempotent


def test_interrupt_right_after_spawn_kills_the_command(
    fixture_tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _main_thread_only()
    spawned: list[int] = []
    real_popen = subprocess.Popen

    class PopenThenCtrlC(real_popen):  # type: ignore[misc,valid-type]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            spawned.append(self.pid)
            os.kill(os.getpid(), signal.SIGINT)
            _spin()  # without the deferral the command is never recorded, so never killed

    with LocalSandbox(fixture_tree) as sb:
        monkeypatch.setattr(subprocess, "Popen", PopenThenCtrlC)
        started = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            sb.run("sleep 30 & sleep 30")
        monkeypatch.undo()
        assert time.monotonic() - started < 10
    assert spawned
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            os.killpg(spawned[0], 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        raise AssertionError("the command's process group outlived the interrupt")


def test_check_health_follows_the_live_tree(fixture_tree: Path) -> None:
    sb = LocalSandbox(fixture_tree)
    with pytest.raises(SandboxError, match="closed"):
        sb.check_health()
    with sb:
        sb.check_health()
        tree.remove_tree(sb.live)
        with pytest.raises(SandboxError, match="live tree is gone"):
            sb.check_health()
