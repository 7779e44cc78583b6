"""Red team of the agent's file tools (issue 42, class 2): what the agent makes with its
walled shell must not reach the harness through its other tools.

A real run (``run_task``, the real OpenAI-compatible provider talking HTTP to the fake
server, the local sandbox behind bubblewrap or a Docker container) plays an agent that, with
its bash tool, links to the task's holdout and solution (absolutely and by climbing ``..``),
to the harness's own ``/proc/self/environ`` and ``cmdline`` and to ``/proc/<pid>/environ``,
chains an in-tree link to an escaping one, makes fifos, a socket and a tree 1,100 folders
deep, and a file a backtracking pattern never finishes on; then it calls read, write, edit,
glob and grep on every one of them.

Checked against what the run did, not what it says:

* 0 leaks: no tool result the model was sent (every request the fake server received)
  holds the holdout's or the solution's marker, the harness's environment value, its API
  key or a marker only its command line carries;
* the task folder is byte-for-byte unchanged (no write went through a link);
* every call on a fifo or socket is answered as an error, that step takes seconds, the
  backtracking grep is cut at the call's deadline, and the run ends, not errored, well
  within its limit.

The run is a child process with a hard limit, so a tool that blocks for ever (on a fifo, or
in ``re`` holding the GIL) fails the test instead of hanging it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.reliability.conftest import REPO, tree_digest
from tests.support.tasks import HOLDOUT, SOLUTION, TaskBuilder, good

CHILD_LIMIT_S = 240.0
TASK_TIMEOUT_S = 120.0
TOOL_TIMEOUT_S = 8.0

TARGETS = [
    "hold.py", "hold/tests/test_holdout_chunk.py", "sol.py", "sol/chunker/core.py",
    "climb/tests/test_holdout_chunk.py", "env.txt", "cmd.txt", "penv.txt", "climbenv.txt",
    "inner/tests/test_holdout_chunk.py", "pkgdir/up/tests/test_holdout_chunk.py",
]
SPECIAL = ["fifo", "chunker/fifo.py", "sock"]


def _setup_command(task: Path, pid: int) -> str:
    climb = "../" * 40
    return "; ".join([
        f"ln -s {task}/holdout/tests/test_holdout_chunk.py hold.py",
        f"ln -s {task}/holdout hold",
        f"ln -s {task}/solution/chunker/core.py sol.py",
        f"ln -s {task}/solution sol",
        f"ln -s {climb}{str(task).lstrip('/')}/holdout climb",
        "ln -s /proc/self/environ env.txt",
        "ln -s /proc/self/cmdline cmd.txt",
        f"ln -s /proc/{pid}/environ penv.txt",
        f"ln -s {climb}proc/self/environ climbenv.txt",
        "ln -s hold inner",
        "mkdir pkgdir && ln -s ../hold pkgdir/up",
        "echo made",
    ])


def _special_command() -> str:
    return "; ".join([
        "mkfifo fifo chunker/fifo.py",
        "python3 -c \"import socket; socket.socket(socket.AF_UNIX).bind('sock')\"",
        "python3 -c \"print('a' * 48 + 'b')\" > redos.txt",
        "mkdir deep && cd deep && python3 -c \"import os\nfor _ in range(1100):\n"
        "    os.mkdir('d'); os.chdir('d')\nos.symlink('/proc/self/environ', 'env.txt')\n"
        "os.mkfifo('fifo')\nopen('leaf.txt', 'w').write('leaf')\"",
        "echo made",
    ])


def _calls_on(path: str) -> list[tuple[str, dict[str, Any]]]:
    return [
        ("read", {"path": path}),
        ("edit", {"path": path, "old": "a", "new": "b", "replace_all": True}),
        ("write", {"path": path, "content": "overwritten by the agent\n"}),
    ]


def attack(config_text: str) -> None:
    """The child: one hostile run, its record written to ``config["out"]`` as JSON."""
    from endstate_harness.agent.policy import allow_all
    from endstate_harness.agent.providers import OpenAIProvider
    from endstate_harness.agent.session import SessionStore
    from endstate_harness.runner import run_task
    from endstate_harness.task import load_task
    from tests.fake_openai import FakeOpenAI

    config = json.loads(config_text)
    task = load_task(Path(config["task"]))
    deep = "deep/" + "/".join(["d"] * 1100)

    class Maker:
        label = config["kind"]

        def make(self, fixture: Path) -> Any:
            if config["kind"] == "docker":
                from endstate_harness.sandbox.docker.container import DockerSandbox

                return DockerSandbox(fixture, image=config["image"], pull=False)
            from endstate_harness.sandbox.local import LocalSandbox

            return LocalSandbox(fixture, walls=True)

    arrivals: list[float] = []

    class Timed(list):  # type: ignore[type-arg]
        def append(self, item: Any) -> None:
            arrivals.append(time.monotonic())
            super().append(item)

    with FakeOpenAI() as server:
        server.requests = Timed()
        server.reply(tool_calls=[("bash", {"command": _setup_command(task.root, os.getpid())})])
        links: list[tuple[str, dict[str, Any]]] = []
        for target in TARGETS:
            links += _calls_on(target)
        listing = [
            ("glob", {"pattern": "*"}), ("glob", {"pattern": "**/*.txt"}),
            ("grep", {"pattern": "HOLDOUT|SOLUTION|SECRET|sk-|CMDLINE|chunk"}),
            ("grep", {"pattern": "."}),
            ("grep", {"pattern": ".", "glob": "hold*"}),
        ]
        server.reply(tool_calls=links + listing)
        server.reply(tool_calls=[("bash", {"command": _special_command()})])
        server.reply(tool_calls=[
            *listing, ("grep", {"pattern": ".", "glob": "deep/*"}),
            ("read", {"path": f"{deep}/leaf.txt"}), ("read", {"path": f"{deep}/env.txt"}),
        ])
        special: list[tuple[str, dict[str, Any]]] = []
        for target in [*SPECIAL, f"{deep}/fifo"]:
            special += _calls_on(target)
        special += [("grep", {"pattern": "x", "glob": "chunker/*"}),
                    ("glob", {"pattern": "chunker/*"})]
        server.reply(tool_calls=special)
        server.reply(tool_calls=[("grep", {"pattern": "(a+)+$", "glob": "redos.txt"})])
        # what the end state must not hold for this test (deep trees and fifos in an end
        # state are another guard's business): removed without recursion
        server.reply(tool_calls=[("bash", {"command": "find deep -delete; rm fifo "
                                                      "chunker/fifo.py sock; echo cleaned"})])
        server.reply(content="done")
        store = SessionStore(Path(config["out"]).with_suffix(".sqlite3"))
        provider = OpenAIProvider("fake-model", base_url=server.base_url,
                                  api_key=os.environ["OPENAI_API_KEY"], max_retries=0)
        started = time.monotonic()
        result = run_task(task, provider_factory=lambda _t: provider, sandbox=Maker(),
                          policy=allow_all(), tool_timeout_s=TOOL_TIMEOUT_S,
                          session_store=store)
        took = time.monotonic() - started
        session = store.load(result.session_id) if getattr(result, "session_id", "") else None
        requests = list(server.requests)
    results = []
    if session is not None:
        calls = {c.id: (c.name, c.arguments) for m in session.messages for c in m.tool_calls}
        for m in session.messages:
            if m.tool_result is not None:
                name, args = calls.get(m.tool_result.call_id, ("?", {}))
                results.append({"tool": name, "args": args, "content": m.tool_result.content,
                                "is_error": m.tool_result.is_error})
    seen = [msg.get("content") or "" for body in requests for msg in body.get("messages", [])
            if msg.get("role") == "tool"]
    Path(config["out"]).write_text(json.dumps({
        "error": result.error, "reason": result.reason, "took": took, "results": results,
        "seen": seen, "arrivals": [t - started for t in arrivals],
    }))


def _run(kind: str, tmp_path: Path, image: str | None = None) -> None:
    nonce = uuid.uuid4().hex[:12]
    holdout = {rel: text + f"# HOLDOUT-{nonce}\n" for rel, text in HOLDOUT.items()}
    solution = {rel: text + f"# SOLUTION-{nonce}\n" for rel, text in SOLUTION.items()}
    task = TaskBuilder(tmp_path / "suite")(good(timeout_s=TASK_TIMEOUT_S), holdout=holdout,
                                           solution=solution)
    before = tree_digest(task)
    out = tmp_path / "record.json"
    config = json.dumps({"task": str(task), "kind": kind, "image": image, "out": str(out),
                         "cmdline": f"CMDLINE-{nonce}"})
    secrets = {"holdout": f"HOLDOUT-{nonce}", "solution": f"SOLUTION-{nonce}",
               "environment": f"ENVSECRET-{nonce}", "api key": f"sk-KEY{nonce}",
               "command line": f"CMDLINE-{nonce}"}
    env = {**os.environ, "ENDSTATE_REDTEAM_SECRET": secrets["environment"],
           "OPENAI_API_KEY": secrets["api key"]}
    code = ("import sys\nfrom tests.reliability.test_agent_tools_redteam import attack\n"
            "attack(sys.argv[1])\n")
    started = time.monotonic()
    try:
        proc = subprocess.run([sys.executable, "-c", code, config], cwd=REPO, env=env,
                              capture_output=True, text=True, timeout=CHILD_LIMIT_S)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the run did not end within {CHILD_LIMIT_S:g}s: a tool blocked")
    assert proc.returncode == 0, proc.stderr[-3000:]
    record = json.loads(out.read_text())
    took = time.monotonic() - started

    leaks = [(what, text[max(0, text.index(value) - 60):text.index(value) + 40])
             for text in record["seen"] for what, value in secrets.items() if value in text]
    assert not leaks, f"tool output leaked: {leaks}"
    assert tree_digest(task) == before, "a tool wrote through a link into the task folder"
    assert not record["error"], f"the run errored: {record['error']}"

    by_path: dict[str, list[dict[str, Any]]] = {}
    for r in record["results"]:
        by_path.setdefault(str(r["args"].get("path", r["args"].get("pattern"))), []).append(r)
    for target in [*TARGETS, *SPECIAL]:
        answers = by_path.get(target, [])
        assert len(answers) == 3 and all(a["is_error"] for a in answers), (target, answers)
    found = by_path["HOLDOUT|SOLUTION|SECRET|sk-|CMDLINE|chunk"]
    assert all(not a["is_error"] and "chunker/core.py:1:def chunk" in a["content"]
               for a in found), found  # grep ran, where the agent's shell runs
    redos = by_path["(a+)+$"][0]
    assert redos["is_error"] and "did not finish" in redos["content"], redos
    # the special files' step and the backtracking grep: each ends at once / at its deadline
    arrivals = record["arrivals"]
    assert arrivals[5] - arrivals[4] < 30, f"the fifo step took {arrivals[5] - arrivals[4]:.1f}s"
    assert arrivals[6] - arrivals[5] < TOOL_TIMEOUT_S + 20, "the grep was not cut in time"
    assert took < TASK_TIMEOUT_S + 60, f"the run took {took:.0f}s"


def test_local_walled_run_leaks_nothing_and_never_blocks(tmp_path: Path) -> None:
    from endstate_harness.sandbox import walls

    found = walls.status()
    if not found.available:
        print(f"\nSKIPPING: bubblewrap cannot wall the local sandbox: {found.reason}",
              file=sys.stderr)
        pytest.skip(found.reason)
    _run("local", tmp_path)


@pytest.mark.docker
def test_docker_run_leaks_nothing_and_never_blocks(tmp_path: Path, docker_image: str) -> None:
    _run("docker", tmp_path, docker_image)
