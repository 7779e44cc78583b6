"""Faults in the harness: a model endpoint that hangs, answers garbage or 500s, and a sandbox
container killed from outside in the middle of a suite.

Each is a real fault of a real part: an HTTP server on loopback that misbehaves per task (the
task's prompt names the fault, so one suite exercises all of them in one run), and a
container killed through the Docker API while a command runs in it. The promise checked: the
tasks a fault hit are reported as *errors* (kept out of the pass rate, never as a pass or an
ordinary failure), every other task still gets its verdict, and the exit status is 2
(unassessed), as prove's is.
"""

from __future__ import annotations

import copy
import json
import subprocess
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.reliability.conftest import CLI, containers_of, private_env, tree_digest
from tests.rules.conftest import GOOD_MANIFEST, SOLUTION, TaskBuilder

FAULTS = ("hang", "malformed", "http500", "ok")


def _completion(message: dict[str, Any]) -> bytes:
    return json.dumps(
        {
            "id": "chatcmpl-fault",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": "fault-model",
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"
                         if "tool_calls" not in message else "tool_calls"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        }
    ).encode()  # fmt: skip


class FaultyModel:
    """An OpenAI-compatible endpoint whose behaviour depends on the task's prompt.

    ``FAULT=hang`` never answers (until the test ends), ``FAULT=malformed`` answers 200 with a
    body that is not JSON, ``FAULT=http500`` answers 500 every time, ``FAULT=ok`` writes the
    solution with one tool call and then ends its turn.
    """

    def __init__(self) -> None:
        self.stop = threading.Event()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", "0"))))
                text = json.dumps(body.get("messages", []))
                fault = next((f for f in FAULTS if f"FAULT={f}" in text), "ok")
                if fault == "hang":
                    owner.stop.wait(120)
                    return
                if fault == "malformed":
                    self._send(200, b'{"id": "x", "choices": [ {"message": ')
                    return
                if fault == "http500":
                    self._send(500, b'{"error": {"message": "fault: internal error"}}')
                    return
                if '"role": "tool"' in text:
                    self._send(200, _completion({"role": "assistant", "content": "done"}))
                    return
                call = {
                    "id": "call_1",
                    "type": "function",
                    "function": {
                        "name": "write",
                        "arguments": json.dumps(
                            {"path": "chunker/core.py", "content": SOLUTION["chunker/core.py"]}
                        ),
                    },
                }
                self._send(200, _completion({"role": "assistant", "content": None,
                                             "tool_calls": [call]}))  # fmt: skip

            def _send(self, status: int, payload: bytes) -> None:
                try:
                    self.send_response(status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def __enter__(self) -> FaultyModel:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.server.shutdown()
        self.server.server_close()


def _suite(base: Path, faults: tuple[str, ...], timeout_s: float) -> Path:
    builder = TaskBuilder(base)
    for fault in faults:
        manifest = copy.deepcopy(GOOD_MANIFEST)
        manifest["id"] = f"task-{fault}"
        manifest["timeout_s"] = timeout_s
        builder(
            manifest,
            name=f"task-{fault}",
            prompt=f"Make the failing test pass. FAULT={fault}\n",
        )
    return base


def _eval(args: list[str], base: Path, timeout: float) -> tuple[int, dict[str, Any], str, int]:
    out = base / "out"
    env = private_env(base, uuid.uuid4().hex)
    proc = subprocess.Popen(
        [*CLI, "eval", *args, "--out", str(out)],
        env=env,
        cwd=base,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    _, err = proc.communicate(timeout=timeout)
    results = (
        json.loads((out / "results.json").read_text()) if (out / "results.json").exists() else {}
    )
    return proc.returncode, results, err, proc.pid


def _by_task(results: dict[str, Any]) -> dict[str, dict[str, Any]]:
    runs = results.get("runs") or results.get("results") or []
    return {r.get("task_id") or r.get("task"): r for r in runs}


@pytest.fixture(scope="module")
def faulty_suite_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One eval of a suite with one task per fault (they run one after another)."""
    tmp_path = tmp_path_factory.mktemp("faults")
    suite = _suite(tmp_path / "suite", FAULTS, timeout_s=6.0)
    before = tree_digest(suite)
    started = time.monotonic()
    with FaultyModel() as model:
        code, results, err, _ = _eval(
            [str(suite), "--provider", "openai", "--model", "fault-model", "--base-url",
             model.base_url, "--sandbox", "local"],
            tmp_path / "run",
            timeout=180,
        )  # fmt: skip
    return {
        "code": code,
        "runs": _by_task(results),
        "err": err,
        "took": time.monotonic() - started,
        "suite_unchanged": tree_digest(suite) == before,
        "tmp_left": sorted(p.name for p in (tmp_path / "run" / "tmp").iterdir()),
    }


@pytest.mark.timeout(240)
def test_model_endpoint_faults_are_errors_and_the_suite_completes(
    faulty_suite_run: dict[str, Any],
) -> None:
    run = faulty_suite_run
    runs = run["runs"]
    assert set(runs) == {f"task-{f}" for f in FAULTS}, run["err"][-2000:]
    for fault in ("malformed", "http500"):
        hit = runs[f"task-{fault}"]
        assert hit.get("error"), f"{fault}: not reported as an error: {hit}"
        assert not hit.get("passed"), hit
    ok = runs["task-ok"]
    assert ok.get("passed") and not ok.get("error"), f"the healthy task was hurt: {ok}"
    assert run["code"] == 2, f"the exit status hid the errors: {run['code']}"
    assert "Traceback" not in run["err"]
    assert run["suite_unchanged"]
    assert not run["tmp_left"], run["tmp_left"]
    assert run["took"] < 150, f"the suite took {run['took']:.0f} s: a fault was not bounded"


@pytest.mark.timeout(240)
def test_a_hanging_model_endpoint_is_an_error(faulty_suite_run: dict[str, Any]) -> None:
    hung = faulty_suite_run["runs"]["task-hang"]
    assert hung.get("timed_out"), hung  # bounded by the task's deadline
    assert hung.get("error"), f"a hanging endpoint was graded as a task failure: {hung}"
    assert not hung.get("passed") and not hung.get("steps"), hung
    assert faulty_suite_run["code"] == 2, "eval must exit 2 when a run was unassessed"


@pytest.mark.docker
@pytest.mark.timeout(240)
def test_container_killed_mid_suite_is_a_failure_and_the_rest_completes(
    tmp_path: Path, sandbox_image: str
) -> None:
    """The container of the first task is killed while the agent's command runs.

    From the harness's side this cannot be told apart from the agent's code killing its own
    sandbox (the daemon still answers), and an error would take the attempt out of the pass rate
    — the reward hack of issue 12 — so it is a failure with the reason, and the next task runs.
    """
    suite = tmp_path / "suite"
    builder = TaskBuilder(suite)
    for task_id in ("a-victim", "b-survivor"):
        manifest = copy.deepcopy(GOOD_MANIFEST)
        manifest["id"] = task_id
        manifest["timeout_s"] = 60.0
        builder(manifest, name=task_id)
    script = tmp_path / "steps.json"
    script.write_text(json.dumps([[{"tool": "bash", "args": {"command": "sleep 4; echo slept"}}]]))
    base = tmp_path / "run"
    env = private_env(base, uuid.uuid4().hex)
    out = base / "out"
    proc = subprocess.Popen(
        [*CLI, "eval", str(suite), "--provider", "scripted", "--script", str(script),
         "--sandbox", "docker", "--image", sandbox_image, "--out", str(out)],
        env=env, cwd=base, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    from endstate_harness.sandbox.docker.container import connect

    killed = None
    deadline = time.monotonic() + 60
    while killed is None and time.monotonic() < deadline and proc.poll() is None:
        found = containers_of(proc.pid)
        if found:
            time.sleep(1.5)  # the sleep is running in it now
            client = connect(timeout_s=30)
            try:
                killed = found[0].split()[0]
                client.api.kill(killed)
            finally:
                client.close()
        time.sleep(0.05)
    _, err = proc.communicate(timeout=120)
    assert killed, f"never saw the first container: {err[-800:]}"
    runs = _by_task(json.loads((out / "results.json").read_text()))
    victim, survivor = runs["a-victim"], runs["b-survivor"]
    assert not victim.get("passed"), victim
    assert not survivor.get("error") and survivor.get("steps"), (
        f"the next task was hurt: {survivor}"
    )
    assert not containers_of(proc.pid)
    assert not list((base / "tmp").iterdir())
    assert not victim.get("error"), f"a killed container must fail the attempt: {victim}"
    assert "killed the sandbox" in victim["reason"], victim
    assert proc.returncode == 1, f"exit {proc.returncode}: a failed attempt exits 1"
