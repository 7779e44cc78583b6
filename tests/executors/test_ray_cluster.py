"""``--executor ray`` on a real two-node Ray cluster started on this machine.

The cluster (``ray.cluster_utils.Cluster``: a head and a worker node, each its own raylet,
one CPU and one ``docker`` resource each, on loopback) is shared by the module; every run is
the real command line in a subprocess, the driver, pointed at it with ``--address``. Checked:
prove of the shipped suite and an oracle eval give what the local executor gives; killing
the worker node in the middle of a run still completes it with the same results; SIGINT on
the driver leaves no container and no Ray task. About 2 minutes in all on 2 busy cores.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

# Ray uses this machine's outward address unless told (before it is imported) to stay on
# loopback; the cluster, this process and every driver subprocess (inheriting it) do.
os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'endstate-author[ray]')")
from ray.cluster_utils import Cluster  # noqa: E402

from tests.support import raycluster, session  # noqa: E402
from tests.support.probed import build_probed_suite  # noqa: E402

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
TASKS = REPO / "tasks"
CLI = [sys.executable, "-m", "endstate_author"]
TIMINGS = {"seconds", "wall_clock_s", "latencies_s", "duration_s", "started_at", "session_id"}


def _start_cluster() -> Cluster:
    """A head and a worker node on loopback (one retry); skipped, with the reason printed,
    when Ray cannot start one here."""
    try:
        return raycluster.start_cluster(2)
    except RuntimeError as exc:
        print(f"\nSKIPPING Ray cluster tests: {exc}", file=sys.stderr)
        pytest.skip(str(exc))


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    c = _start_cluster()
    ray.init(
        address=c.address,
        logging_level="WARNING",
        log_to_driver=False,
    )
    try:
        yield c
    finally:
        ray.shutdown()
        raycluster.stop_cluster(c)


def _env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "ENDSTATE_AUTHOR_CACHE": str(tmp_path / "cache")}


def _prove(tmp_path: Path, *extra: str, address: str | None = None) -> dict[str, Any]:
    args = [*CLI, "prove", str(TASKS), "--sandbox", "local", "--only", "holdout", "--no-cache"]
    args += ["-o", "json", *extra]
    if address is not None:
        args += ["--executor", "ray", "--address", address]
    proc = subprocess.run(args, capture_output=True, text=True, env=_env(tmp_path), timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


_RAN_IN = re.compile(r"(Ran \d+ tests?) in \d+\.\d+s")
"""unittest's own timing in a check's detail ("Ran 2 tests in 0.002s"), which differs by run."""


def _strip(value: Any) -> Any:
    """The document without timings, without the node and without whether the cache answered
    (what may differ between runs: a check record carries ``cached`` since the wire format)."""
    if isinstance(value, dict):
        return {
            k: _strip(v)
            for k, v in value.items()
            if k not in TIMINGS | {"node", "cached"} and not k.endswith("_s")
        }
    if isinstance(value, list):
        return [_strip(v) for v in value]
    if isinstance(value, str):
        return _RAN_IN.sub(r"\1", value)
    return value


@pytest.fixture(scope="module")
def local_prove(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return _prove(tmp_path_factory.mktemp("local"))


def _node_ids() -> dict[str, str]:
    return {n["NodeID"]: n["NodeManagerAddress"] for n in ray.nodes() if n["Alive"]}


def test_prove_of_the_shipped_suite_matches_the_local_executor(
    cluster: Cluster, local_prove: dict[str, Any], tmp_path: Path
) -> None:
    remote = _prove(tmp_path, address=cluster.address)
    assert len(remote["tasks"]) == len(list(TASKS.glob("*/task.json"))) == 17
    assert _strip(remote) == _strip(local_prove)
    nodes = {t["node"].split("/", 1)[1] for t in remote["tasks"]}
    assert nodes <= set(_node_ids())
    assert len(nodes) == 2, "both nodes took tasks"
    # the driver alone fills the cache: a second run is answered from it, nothing sent out
    again = _prove(tmp_path, address=cluster.address)
    assert _strip(again) == _strip(remote)


def test_an_oracle_eval_matches_the_local_executor(cluster: Cluster, tmp_path: Path) -> None:
    def run(out: Path, *extra: str) -> dict[str, Any]:
        args = [*CLI, "eval", str(TASKS), "--provider", "oracle", "--sandbox", "local"]
        args += ["--task", "fix-semver-precedence", "--task", "add-temperature-units"]
        args += ["--repeat", "2", "--out", str(out), *extra]
        proc = subprocess.run(args, capture_output=True, text=True, timeout=240)
        assert proc.returncode == 0, proc.stderr[-3000:]
        return json.loads((out / "results.json").read_text())

    local = run(tmp_path / "local")
    remote = run(tmp_path / "ray", "--executor", "ray", "--address", cluster.address)
    assert _strip(remote) == _strip(local)
    assert [r["passed"] for r in remote["results"]] == [True] * 4
    assert all(r["node"].split("/", 1)[1] in _node_ids() for r in remote["results"])
    # the sessions came back to the driver's store
    from endstate_harness.agent.session import SessionStore

    ids = {row.id for row in SessionStore(tmp_path / "ray" / "sessions.sqlite3").list()}
    assert {r["session_id"] for r in remote["results"]} <= ids


def test_killing_a_worker_node_mid_run_still_completes_with_the_same_results(
    cluster: Cluster, local_prove: dict[str, Any], tmp_path: Path
) -> None:
    # a third node, killed while it proves: the module's two stay whole for the other tests
    doomed = cluster.add_node(**raycluster.NODE)
    cluster.wait_for_nodes()
    raylet = doomed.all_processes["raylet"][0].process.pid
    before = _node_scratch()
    result: dict[str, Any] = {}
    thread = threading.Thread(
        target=lambda: result.update(_prove(tmp_path, address=cluster.address))
    )
    thread.start()
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and not _running_prove(raylet):
            time.sleep(0.2)
        assert _running_prove(raylet), "the third node never took a task"
    finally:
        cluster.remove_node(doomed, allow_graceful=False)
    thread.join(timeout=240)
    assert not thread.is_alive()
    assert _strip(result) == _strip(local_prove)
    # the killed node's unit left its folders (and its job's workers are killed when the
    # driver leaves); the workers' watchers remove them
    assert _eventually_empty(lambda: _node_scratch() - before) == set()
    assert doomed.node_id not in {t["node"].split("/", 1)[1] for t in result["tasks"]}


def _running_prove(raylet: int) -> bool:
    """Whether a worker of the raylet ``raylet`` is proving a task right now."""
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            ppid = int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1])
            title = (proc / "cmdline").read_bytes()
        except (OSError, ValueError, IndexError):
            continue
        if ppid == raylet and title.startswith(b"ray::_prove_remote"):
            return True
    return False


def _ray_owned_containers() -> set[str]:
    """This session's sandbox containers whose owner is a Ray worker process (``ray::...``):
    another run's Ray on the same daemon is not this cluster."""
    import docker

    client = docker.from_env()
    try:
        found = set()
        # sparse: no inspect per container (other work's containers come and go meanwhile)
        labelled = {"label": "endstate-author=1"}
        for ctr in client.containers.list(all=True, sparse=True, filters=labelled):
            if not session.mounts_here(ctr.attrs):
                continue
            pid = (ctr.attrs.get("Labels") or {}).get("endstate-author.pid", "")
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                cmd = b""
            if cmd.startswith(b"ray::") or ctr.id in _SEEN:
                found.add(ctr.id or "")
        return found
    finally:
        client.close()


_SEEN: set[str] = set()

_RAY_CANCEL_CRASH = "TaskManager::CompletePendingTask"


def _node_scratch() -> set[str]:
    """What the units make in the temp folder the nodes share with this process: their
    scratch folders, sandboxes, judge folders and zygote folders (``endstate-*``), in the
    session's own folders (tests/support/session.py; the nodes inherit its TMPDIR, and with
    a TMPDIR no grading tree goes to /dev/shm): another process's folders are not there."""
    return {str(p) for folder in session.folders() for p in folder.glob("endstate-*")}


def _eventually_empty(probe: Callable[[], set[str]], seconds: float = 30.0) -> set[str]:
    """``probe()`` once it is empty, or what it still holds after ``seconds``."""
    deadline = time.monotonic() + seconds
    found = probe()
    while found and time.monotonic() < deadline:
        time.sleep(0.2)
        found = probe()
    return found


@pytest.mark.docker
def test_sigint_on_the_driver_leaves_no_container_and_no_ray_task(
    cluster: Cluster, docker_image: str, tmp_path: Path
) -> None:
    args = [
        *CLI,
        "prove",
        str(TASKS / "fix-semver-precedence"),
        str(TASKS / "add-temperature-units"),
    ]
    args += ["--sandbox", "docker", "--image", docker_image, "--only", "defects", "--no-cache"]
    args += ["-o", "json", "--executor", "ray", "--address", cluster.address]
    before = _node_scratch()
    proc = subprocess.Popen(
        args, env=_env(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and not _SEEN:
            _SEEN.update(_ray_owned_containers())
            time.sleep(0.2)
        assert _SEEN, "no unit started a container on the cluster"
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    text = err.decode(errors="replace")
    if proc.returncode != 130 and _RAY_CANCEL_CRASH in text:
        # Ray 2.x's driver can abort in TaskManager::CompletePendingTask when a unit's reply
        # crosses its cancel (task_manager.cc: "You have likely discovered a bug in Ray");
        # about 1 run in 7 here. Not ours to fix; what must still hold is checked below.
        print("\nNOTE: the Ray driver hit Ray's own cancel/reply crash; cleanup still checked",
              file=sys.stderr)
    else:
        assert proc.returncode == 130, text[-2500:]
    # A cancelled unit may be reported done before it unwinds, and Ray then kills its worker
    # when the driver leaves; the worker's watcher removes the container a moment later.
    assert _eventually_empty(_ray_owned_containers) == set()
    assert _eventually_empty(lambda: _node_scratch() - before) == set()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if ray.available_resources().get("CPU") == ray.cluster_resources().get("CPU"):
            break
        time.sleep(0.5)
    assert ray.available_resources().get("CPU") == ray.cluster_resources().get("CPU") == 2


# --- the same answer on every path: a suite with saved probes, defects and a configuration ---

PROBED_ONLY = ["--only", "probes", "--only", "defects", "--only", "directions"]


def _prove_probed(
    suite: Path, cache_dir: Path, *extra: str, address: str | None = None
) -> tuple[int, dict[str, Any], str]:
    args = [*CLI, "prove", str(suite), "--sandbox", "local", *PROBED_ONLY, "-o", "json", *extra]
    if address is not None:
        args += ["--executor", "ray", "--address", address]
    env = {**os.environ, "ENDSTATE_AUTHOR_CACHE": str(cache_dir)}
    proc = subprocess.run(args, capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode in (0, 1), proc.stderr[-3000:]
    return proc.returncode, json.loads(proc.stdout), proc.stderr


def _findings(rc: int, doc: dict[str, Any], _err: str = "") -> Any:
    """The exit status, every finding and every check's verdict, without timings and nodes."""
    return rc, _strip(doc)


@pytest.fixture(scope="module")
def probed_local(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    """The probed suite (tests/support/probed.py) and what the local executor finds in it."""
    base = tmp_path_factory.mktemp("probed")
    suite = build_probed_suite(base / "user")
    found = _findings(*_prove_probed(suite, base / "cache", "--no-cache"))
    rc, doc = found
    codes = [(d["code"], d["severity"]) for d in doc["diagnostics"]]
    # not a vacuous comparison: each input a node could miss changes a finding here
    assert rc == 1 and codes.count(("ES906", "error")) == 3, codes
    assert ("ES311", "error") in codes, "the configuration above the suite made ES311 an error"
    assert any(c["check"].startswith("defect ") for t in doc["tasks"] for c in t["checks"])
    return suite, found


def test_a_suite_with_probes_and_a_configuration_proves_alike_on_the_cluster(
    cluster: Cluster, probed_local: tuple[Path, Any], tmp_path: Path
) -> None:
    """Issue 47: a node proved the task without the suite's probes (0 ES906, exit 0) and
    without its configuration; every finding must be the local executor's."""
    suite, local = probed_local
    remote = _findings(*_prove_probed(suite, tmp_path / "cache", "--no-cache",
                                      address=cluster.address))
    assert remote == local


def test_a_proof_cached_from_the_cluster_answers_locally_as_the_local_proof(
    cluster: Cluster, probed_local: tuple[Path, Any], tmp_path: Path
) -> None:
    """What the cluster stored in the cache is what a local proof finds: read back by a local
    prove (as the pre-commit hook and the language server read it), finding for finding."""
    suite, local = probed_local
    first = _prove_probed(suite, tmp_path / "cache", address=cluster.address)
    assert _findings(*first) == local
    again = _prove_probed(suite, tmp_path / "cache", "--progress-lines")
    answered = [line for line in again[2].splitlines() if line.startswith("checking:")]
    assert len(answered) == 3 and all(line.endswith(": answered from the cache")
                                      for line in answered), again[2][-2000:]
    assert _findings(*again) == local
