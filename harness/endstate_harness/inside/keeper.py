"""Process 1 of a Docker sandbox (the keeper): shipped as source, never imported.

Why a process of our own, and why as process 1. The keeper holds the container open, and every
sweep ("nothing outlives a command", the pool's reset, the end of everything before the host
reads or rewrites the live tree) must spare it. What is spared must be decided by something
the code under test cannot forge: process 1 of the container's PID namespace is such a thing
(no process can take its number, and the kernel drops every signal sent to it from inside the
namespace that it has no handler for, SIGKILL included). A pid written in a file of the
container's writable ``/tmp`` is not (the code under test could name its own process there).

The code under test runs with the keeper's uid, so a keeper that could be traced could be made
to run anything, spared: it makes itself non-dumpable first (then ``ptrace`` and
``/proc/1/mem`` need a capability the container does not have). It reaps every orphan, as
Docker's init did (a fork bomb's corpses would otherwise fill the pids limit), and installs no
signal handler: SIGINT (which Python handles by default) is ignored, SIGCHLD is blocked and
waited for. Standard library only, Python 3.8+.
"""

import ctypes
import os
import signal
import sys


def _reap():
    """Reap every child that has ended (orphans are re-parented here)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        except InterruptedError:
            continue
        if pid == 0:
            return


def main():
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(4, 0, 0, 0, 0) != 0:  # PR_SET_DUMPABLE, 0
        # A keeper that can be traced is not one: the container stops, and its start fails.
        sys.stderr.write(f"endstate keeper: prctl failed ({ctypes.get_errno()})\n")
        sys.exit(3)
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})
    while True:
        _reap()
        signal.sigtimedwait({signal.SIGCHLD}, 60.0)


main()
