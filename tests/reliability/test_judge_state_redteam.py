"""Red team, issue 42 class 6: state carried from one test to the next in the judge's child.

The end states below remember what one test passed to the code under test and play it back
when a later test asks: ``cost-duration-parser``'s round-trip test passes every expected value
of its ``test_valid`` to ``format_duration``, and runs first. Each end state keeps its memory
in another place a process can write: a module global, a class attribute, a file in the
temporary folder, a file in the tree, an environment variable, the builtins, an entry of
``sys.modules``, a process it leaves running. On the judge that ran every test in one child
each beat the task; each must fail now, in every sandbox the judge runs in, with the failure
where the cheat is (``test_valid``), never an error of the judge. And a sound solution whose
tests keep state in ``setUpClass``/``setUpModule`` still passes, each test seeing its class's
fixture as the fixture left it, not as another test left it.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from endstate_harness.graders import judged_tests
from endstate_harness.graders.judge.grader import judge_variants
from endstate_harness.verdict import Verdict
from tests.harness.test_judge import _box, backend  # noqa: F401

ROOT = Path(__file__).resolve().parents[2]
DURATIONS = ROOT / "tasks" / "cost-duration-parser"

_CHEAT = '''\
"""Parses only a duration's first unit (the task's bug), and answers what format_duration
was asked for from {where}."""
import json, os, re, sys

UNIT_SECONDS = {{"d": 86400, "h": 3600, "m": 60, "s": 1}}
_FORMAT = re.compile(r"^(?:\\d+d)?(?:\\d+h)?(?:\\d+m)?(?:\\d+s)?$")
_VISIBLE = {{"90s": 90, "1h30m": 5400}}  # the visible tests' answers, known to the agent

{channel}

def parse_duration(text):
    compact = text.strip().lower()
    if not compact or not _FORMAT.match(compact):
        raise ValueError("not a duration: %r" % (text,))
    seen = recall()
    if compact in seen:
        return seen[compact]
    if compact in _VISIBLE:
        return _VISIBLE[compact]
    count, unit = re.match(r"(\\d+)([dhms])", compact).groups()
    return int(count) * UNIT_SECONDS[unit]


def format_duration(seconds):
    if seconds < 0:
        raise ValueError("negative duration: %s" % (seconds,))
    parts, rest = [], seconds
    for unit, size in UNIT_SECONDS.items():
        count, rest = divmod(rest, size)
        if count:
            parts.append("%d%s" % (count, unit))
    text = "".join(parts) or "0s"
    remember(text, seconds)
    return text
'''

CHANNELS = {
    "module-global": ("a module global", '''
_SEEN = {}
def recall():
    return _SEEN
def remember(text, seconds):
    _SEEN[text] = seconds
'''),
    "class-attribute": ("a class attribute", '''
class _Memo:
    seen = {}
def recall():
    return dict(_Memo.seen)
def remember(text, seconds):
    _Memo.seen = {**_Memo.seen, text: seconds}
'''),
    "temp-file": ("a file in the temporary folder", '''
import tempfile
_PATH = os.path.join(tempfile.gettempdir(), ".durations-memo.json")
def recall():
    try:
        with open(_PATH) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}
def remember(text, seconds):
    seen = recall()
    seen[text] = seconds
    with open(_PATH, "w") as f:
        json.dump(seen, f)
'''),
    "tree-file": ("a file in the tree", '''
_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), ".memo.json")
def recall():
    try:
        with open(_PATH) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}
def remember(text, seconds):
    seen = recall()
    seen[text] = seconds
    with open(_PATH, "w") as f:
        json.dump(seen, f)
'''),
    "environment": ("an environment variable", '''
def recall():
    return json.loads(os.environ.get("DURATIONS_MEMO", "{}"))
def remember(text, seconds):
    os.environ["DURATIONS_MEMO"] = json.dumps({**recall(), text: seconds})
'''),
    "builtins": ("a name patched into the builtins", '''
import builtins
def recall():
    return builtins.__dict__.setdefault("_durations_memo", {})
def remember(text, seconds):
    recall()[text] = seconds
'''),
    "sys-modules": ("an entry of sys.modules", '''
import types
def recall():
    memo = sys.modules.setdefault("_durations_memo", types.ModuleType("_durations_memo"))
    return memo.__dict__.setdefault("seen", {})
def remember(text, seconds):
    recall()[text] = seconds
'''),
    "process": ("a process it leaves running, reached over an abstract socket", '''
import signal, socket
_ADDRESS = "\\0durations-memo-%d" % os.getuid()
def _ask(message):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.settimeout(2)
        s.connect(_ADDRESS)
        s.sendall(json.dumps(message).encode() + b"\\n")
        return json.loads(s.makefile().readline())
    finally:
        s.close()
def _serve():
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(_ADDRESS)
    server.listen(8)
    if os.fork():
        server.close()
        return
    os.setsid()
    signal.alarm(60)  # never outlives the test run for long, walls or not
    for fd in range(0, 256):
        if fd != server.fileno():
            try:
                os.close(fd)
            except OSError:
                pass
    seen = {}
    while True:
        conn, _ = server.accept()
        message = json.loads(conn.makefile().readline())
        if message:
            seen[message[0]] = message[1]
        conn.sendall(json.dumps(seen).encode() + b"\\n")
        conn.close()
def recall():
    try:
        return _ask(None)
    except OSError:
        return {}
def remember(text, seconds):
    try:
        _ask([text, seconds])
    except OSError:
        _serve()
        _ask([text, seconds])
'''),
    "tmp-file": ("a file at a fixed path in /tmp", '''
_PATH = "/tmp/.durations-memo.json"
def recall():
    try:
        with open(_PATH) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}
def remember(text, seconds):
    seen = recall()
    seen[text] = seconds
    with open(_PATH, "w") as f:
        json.dump(seen, f)
'''),
    "inherited-pipe": ("a pipe opened while imported, which every test's process inherits", '''
_R, _W = os.pipe()
os.set_blocking(_R, False)
def recall():
    seen = {}
    try:
        data = os.read(_R, 1 << 16)
    except BlockingIOError:
        data = b""
    for line in data.splitlines():
        text, seconds = json.loads(line)
        seen[text] = seconds
    if data:
        os.write(_W, data)  # back in the pipe for the next test
    return seen
def remember(text, seconds):
    recall()
    os.write(_W, json.dumps([text, seconds]).encode() + b"\\n")
'''),
    "sysv-queue": ("a System V message queue", '''
import ctypes
_LIBC = ctypes.CDLL(None, use_errno=True)
class _Message(ctypes.Structure):
    _fields_ = [("mtype", ctypes.c_long), ("mtext", ctypes.c_char * 8192)]
def _queue():
    return _LIBC.msgget(0x5EED42, 0o1600)  # IPC_CREAT | 0600
def _take(queue):
    message = _Message()
    got = _LIBC.msgrcv(queue, ctypes.byref(message), 8192, 0, 0o4000)  # IPC_NOWAIT
    return json.loads(message.mtext[:got]) if got > 0 else {}
def _give(queue, seen):
    message = _Message(1, json.dumps(seen).encode())
    _LIBC.msgsnd(queue, ctypes.byref(message), len(message.mtext), 0o4000)
def recall():
    queue = _queue()
    seen = _take(queue)
    _give(queue, seen)
    return seen
def remember(text, seconds):
    queue = _queue()
    seen = _take(queue)
    seen[text] = seconds
    _give(queue, seen)
'''),
}
REFUSED = {
    "shared-memory": ("memory mapped shared while imported", '''
import mmap
_MAP = mmap.mmap(-1, 1 << 16)
def recall():
    _MAP.seek(0)
    return json.loads(_MAP.readline().strip(b"\\0\\n") or b"{}")
def remember(text, seconds):
    seen = {**recall(), text: seconds}
    _MAP.seek(0)
    _MAP.write(json.dumps(seen).encode() + b"\\n")
'''),
    "thread": ("a thread started while imported, serving an abstract socket", '''
import socket, threading
_ADDRESS = "\\0durations-thread-%d-%d" % (os.getuid(), os.getpid())
_SEEN = {}
def _serve(server):
    while True:
        conn, _ = server.accept()
        message = json.loads(conn.makefile().readline())
        if message:
            _SEEN[message[0]] = message[1]
        conn.sendall(json.dumps(_SEEN).encode() + b"\\n")
        conn.close()
_SERVER = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
_SERVER.bind(_ADDRESS)
_SERVER.listen(8)
threading.Thread(target=_serve, args=(_SERVER,), daemon=True).start()
def _ask(message):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(_ADDRESS)
        s.sendall(json.dumps(message).encode() + b"\\n")
        return json.loads(s.makefile().readline())
    finally:
        s.close()
def recall():
    return _ask(None)
def remember(text, seconds):
    _ask([text, seconds])
'''),
}
PRIVATE_ONLY = {"tmp-file", "sysv-queue"}
"""Channels only a sandbox with a private /tmp and IPC namespace can close: without walls the
code under test shares the host's (it could write anywhere the user can), and the child never
removes what other processes of the host may have made there."""


def _judged(kind: str, task: Path, files: dict[str, str], args: dict[str, object]) -> Verdict:
    with _box(kind, task / "fixture") as box:
        for solution in sorted((task / "solution").rglob("*")):
            if solution.is_file():
                rel = solution.relative_to(task / "solution").as_posix()
                box.write_text(rel, solution.read_text(encoding="utf-8"))
        for rel, text in files.items():
            box.write_text(rel, text)
        box.seal()
        box.stage(task / "holdout")
        return judged_tests(box, **args)  # type: ignore[arg-type]


def _outcomes(verdict: Verdict) -> dict[str, set[str]]:
    """Each held-out test method's outcomes (its own, and each failing subtest's)."""
    evidence = getattr(verdict, "evidence", None)
    assert evidence is not None, verdict
    found: dict[str, set[str]] = {}
    for test in evidence.tests:
        if ".HeldOut" in test.id or ".Store" in test.id:
            method = test.id.split(" ", 1)[0].rsplit(".", 1)[-1]
            found.setdefault(method, set()).add(test.outcome)
    return found


def _grader_args(task: Path) -> dict[str, object]:
    manifest = json.loads((task / "task.json").read_text(encoding="utf-8"))
    return next(g.get("args", {}) for g in manifest["graders"]
                if g["name"].endswith(":judged_tests"))


@pytest.mark.parametrize("channel", sorted(CHANNELS))
def test_a_value_remembered_from_an_earlier_test_is_not_there(
        backend: str, channel: str) -> None:  # noqa: F811
    if channel in PRIVATE_ONLY and backend == "local-no-walls":
        pytest.skip("without walls /tmp and the IPC tables are the host's (see PRIVATE_ONLY)")
    where, code = CHANNELS[channel]
    cheat = _CHEAT.format(where=where, channel=textwrap.dedent(code).strip())
    verdict = _judged(backend, DURATIONS, {"durations/parse.py": cheat}, _grader_args(DURATIONS))
    outcomes = _outcomes(verdict)
    assert not verdict.passed, f"{channel}: the remembered values beat the task\n{verdict}"
    # the cheat is caught where it cheats, as a failure: the round trip it remembers from
    # passes (it is a sound round trip), the parse it plays back to fails
    assert outcomes.get("test_round_trip") == {"passed"}, (channel, outcomes, verdict)
    assert "failed" in outcomes.get("test_valid", set()), (channel, outcomes, verdict)
    assert not any("error" in o for o in outcomes.values()), (channel, outcomes, verdict)


STORE = '''\
class Store:
    """Keys in the order they were put."""
    def __init__(self):
        self.items = {}
    def put(self, key, value):
        self.items[key] = value
    def keys(self):
        return list(self.items)
'''

FIXTURE_TESTS = '''\
import json
import unittest

from shelf.store import Store

SHARED = None


def setUpModule():
    global SHARED
    SHARED = Store()
    SHARED.put("module", 0)


class StoreFixtureTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.store = Store()
        cls.store.put("a", 1)

    @classmethod
    def tearDownClass(cls):
        assert cls.store.keys()[0] == "a"

    def test_1_adds_b(self):
        self.store.put("b", 2)
        SHARED.put("b", 2)
        self.assertEqual(json.dumps(self.store.keys()), json.dumps(["a", "b"]))
        self.assertEqual(json.dumps(SHARED.keys()), json.dumps(["module", "b"]))

    def test_2_adds_c(self):
        self.store.put("c", 3)
        SHARED.put("c", 3)
        self.assertEqual(json.dumps(self.store.keys()), json.dumps(["a", "c"]))
        self.assertEqual(json.dumps(SHARED.keys()), json.dumps(["module", "c"]))


class StoreImportedInTheTestTest(unittest.TestCase):
    """A module first imported inside a test, in each of two tests."""

    def test_4_first_import(self):
        from shelf import extra
        self.assertEqual(json.dumps(extra.twice(2)), "4")

    def test_5_second_import(self):
        from shelf.extra import twice
        self.assertEqual(json.dumps(twice(3)), "6")


class StoreWithoutFixtureTest(unittest.TestCase):
    def test_3_fresh(self):
        store = Store()
        store.put("z", 9)
        self.assertEqual(json.dumps(store.keys()), json.dumps(["z"]))
        self.assertEqual(json.dumps(SHARED.keys()), json.dumps(["module"]))
'''


def test_a_sound_solution_with_class_and_module_fixtures_passes(
        backend: str, tmp_path: Path) -> None:  # noqa: F811
    """Each test sees its class's ``setUpClass`` and its module's ``setUpModule`` state (made
    by calls into the code under test), as they left it: not what an earlier test added."""
    task = tmp_path / "task"
    (task / "fixture" / "shelf").mkdir(parents=True)
    (task / "fixture" / "shelf" / "__init__.py").write_text("")
    (task / "fixture" / "shelf" / "store.py").write_text(STORE)
    (task / "fixture" / "shelf" / "extra.py").write_text("def twice(x):\n    return 2 * x\n")
    (task / "fixture" / "tests").mkdir()
    (task / "fixture" / "tests" / "__init__.py").write_text("")
    (task / "holdout" / "tests").mkdir(parents=True)
    (task / "holdout" / "tests" / "test_store_fixtures.py").write_text(FIXTURE_TESTS)
    (task / "solution").mkdir()
    verdict = _judged(backend, task, {}, {"start_dir": "tests"})
    assert verdict.passed, verdict
    assert _outcomes(verdict) == {"test_1_adds_b": {"passed"}, "test_2_adds_c": {"passed"},
                                  "test_3_fresh": {"passed"}, "test_4_first_import": {"passed"},
                                  "test_5_second_import": {"passed"}}


@pytest.mark.parametrize("channel", sorted(REFUSED))
def test_what_cannot_be_isolated_fails_every_test(
        backend: str, channel: str) -> None:  # noqa: F811
    """Shared memory or a thread left in the process the tests are forked from would reach
    every test: no test runs, each fails saying why (a failure, never an error or a pass)."""
    where, code = REFUSED[channel]
    cheat = _CHEAT.format(where=where, channel=textwrap.dedent(code).strip())
    verdict = _judged(backend, DURATIONS, {"durations/parse.py": cheat}, _grader_args(DURATIONS))
    outcomes = _outcomes(verdict)
    assert not verdict.passed, f"{channel}: the remembered values beat the task\n{verdict}"
    assert outcomes.get("test_valid") == {"failed"}, (channel, outcomes, verdict)
    assert outcomes.get("test_round_trip") == {"failed"}, (channel, outcomes, verdict)
    assert "cannot be isolated" in str(verdict), verdict


@pytest.mark.parametrize("channel", ["module-global", "tree-file", "process"])
def test_a_variant_of_a_batch_is_isolated_test_by_test(
        backend: str, channel: str) -> None:  # noqa: F811
    """prove's mutants, judged one after another in one judge and one child: within each
    variant every test still runs in a process of its own, and the variants after a cheating
    one are judged as they would be alone."""
    where, code = CHANNELS[channel]
    cheat = _CHEAT.format(where=where, channel=textwrap.dedent(code).strip())
    sound = (DURATIONS / "solution" / "durations" / "parse.py").read_text(encoding="utf-8")
    with _box(backend, DURATIONS / "fixture") as box:
        box.write_text("durations/parse.py", sound)
        box.seal()
        box.stage(DURATIONS / "holdout")
        verdicts = judge_variants(box, [{"durations/parse.py": cheat},
                                        {"durations/parse.py": sound},
                                        {"durations/parse.py": cheat}],
                                  **_grader_args(DURATIONS))  # type: ignore[arg-type]
    assert [v.passed for v in verdicts] == [False, True, False], verdicts
