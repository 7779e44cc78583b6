"""Where the Docker daemon is reached, and whether anything can answer there: read from the
environment with the standard library alone.

Why a module of its own: the sandbox choice (:mod:`endstate_harness.sandbox.choice`) asks it
before it pays for the Docker client (~75 ms to import, more on a busy machine), and prove's
early start asks the choice before prove's own imports; the daemon module
(:mod:`endstate_harness.sandbox.docker.daemon`) names the same address in its messages.
"""

from __future__ import annotations

import os
import stat

DEFAULT_URL = "unix:///var/run/docker.sock"
"""Where the Docker client looks when ``DOCKER_HOST`` is not set."""


def daemon_url() -> str:
    """The daemon's address as the Docker client reads it: ``DOCKER_HOST``, else the socket."""
    return os.environ.get("DOCKER_HOST") or DEFAULT_URL


def nothing_listens() -> bool:
    """True only when no daemon can answer at all: the address is a Unix socket and there is
    no socket at its path. Any other address (TCP, SSH, a socket that exists) may answer and
    is asked by the client; this never says a daemon answers."""
    url = daemon_url()
    for scheme in ("unix://", "http+unix://"):
        if url.startswith(scheme):
            path = url[len(scheme):]
            break
    else:
        return False
    try:
        return not stat.S_ISSOCK(os.stat(path).st_mode)
    except OSError:
        return True
