"""The watcher process that :mod:`endstate_harness.process.watchdog` starts for its owner.

A program of its own (``python -m endstate_harness.sandbox.watcher``), not a function of the
watchdog: it is the one place that knows what an owner can leave behind (folders, Docker
containers), so the owner's side stays free of the sandboxes it protects.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


def main() -> None:
    """The watcher: collect registrations until the owner's end of the pipe closes."""
    # Detach: Ray kills a worker's child processes along with the worker (measured: a direct
    # child in a session of its own died unlogged, holding the pipe); a grandchild whose
    # parent has exited belongs to init and outlives it.
    if os.fork():
        os._exit(0)
    folders: set[str] = set()
    docker = False
    for raw in sys.stdin.buffer:
        line = raw.rstrip(b"\n").decode("utf-8", "surrogateescape")
        if line == "docker":
            docker = True
        elif line.startswith("+"):
            folders.add(line[1:])
        elif line.startswith("-"):
            folders.discard(line[1:])
    # The owner is gone.
    if docker:
        try:
            # deferred: the Docker client is imported only when there may be containers
            from endstate_harness.sandbox.docker.daemon import remove_stray_containers

            remove_stray_containers()
        except Exception:  # no daemon (any more): nothing of ours can be running there
            pass
    if folders:
        # deferred: a watcher whose owner cleaned up exits without importing anything
        from endstate_harness.fdtree import remove_tree

        for folder in folders:
            try:
                remove_tree(Path(folder))
            except OSError:
                pass


if __name__ == "__main__":
    main()
