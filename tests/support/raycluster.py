"""A small Ray cluster on this machine, for the Ray tests and ``bench/scale.py``.

Why here: both start the same head-and-worker cluster on loopback, with the same retry (Ray
gives a node 30 s to come up, and a busy machine can be slower). The caller sets
:data:`endstate_author.executors.LOOPBACK_ONLY` to ``"0"`` before Ray is first imported, so the
cluster and every driver subprocess stay on 127.0.0.1.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from typing import Any

from ray.cluster_utils import Cluster

NODE: dict[str, Any] = {"num_cpus": 1, "resources": {"docker": 1}, "node_ip_address": "127.0.0.1"}
"""One node: one CPU, one unit of the custom ``docker`` resource, on loopback."""


def start_cluster(
    attempts: int, on_failure: Callable[[int, Exception], None] | None = None
) -> Cluster:
    """A head and a worker node (each :data:`NODE`); tried ``attempts`` times.

    ``on_failure(attempt, exc)`` is told of each failed start. Raises :class:`RuntimeError`
    naming the last failure when no attempt succeeded.
    """
    failure: Exception | None = None
    for attempt in range(attempts):
        cluster: Cluster | None = None
        try:
            cluster = Cluster(
                initialize_head=True,
                connect=False,
                head_node_args={**NODE, "include_dashboard": False},
            )
            cluster.add_node(**NODE)
            cluster.wait_for_nodes()
            return cluster
        except Exception as exc:
            failure = exc
            if cluster is not None:
                stop_cluster(cluster)
            if on_failure is not None:
                on_failure(attempt, exc)
    raise RuntimeError(f"a local Ray cluster did not start: {failure}")


def stop_cluster(cluster: Cluster) -> None:
    """Stop every node, then remove the cluster's session folder (its logs and sockets), which
    Ray keeps under its temp folder for good. Ray's own temp folder (``$TMPDIR/ray``, where it
    also notes the current cluster's address) is left: Ray expects to find it."""
    head = cluster.head_node
    session = head.get_session_dir_path() if head is not None else None
    try:
        cluster.shutdown()
    finally:
        if session:
            shutil.rmtree(session, ignore_errors=True)
