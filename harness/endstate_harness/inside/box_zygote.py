"""The warm interpreters of the runner inside a Docker sandbox: shipped as source, part of the
runner's program (:mod:`endstate_harness.inside.box_runner`).
"""

import marshal
import os
import shutil
import socket
import subprocess
import sys
import tempfile

_ANSWER_S = 10.0
"""How long a zygote may take to answer (it forks or reaps at once) before it is dropped."""
_MAX_MSG = 1 << 22


class _Zygote:
    """A warm interpreter of the container (``sandbox_zygote_src``, started private)."""

    def __init__(self, req):
        folder = tempfile.mkdtemp(prefix="endstate-zygote-", dir="/tmp")
        home = os.path.join(folder, "home")
        os.mkdir(home)
        env = dict(req["env"])
        env["HOME"] = env["TMPDIR"] = home
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self.proc = subprocess.Popen(
                [*req["head"], "-c", req["source"], str(theirs.fileno()), req["preload"],
                 "private"],
                cwd=folder, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL, pass_fds=(theirs.fileno(),),
                start_new_session=True,
            )
        finally:
            theirs.close()
        self.pid = self.proc.pid
        self.sock = mine
        try:
            mine.settimeout(60)
            ready = marshal.loads(mine.recv(_MAX_MSG))
            mine.settimeout(_ANSWER_S)
        except (OSError, EOFError, ValueError, TypeError):
            ready = None
        finally:
            # It reads nothing more from its folder: gone before any run, so no reset or
            # digest of /tmp ever sees it.
            shutil.rmtree(folder, ignore_errors=True)
        if type(ready) is not dict or ready.get("ready") is not True:
            self.close()
            raise OSError("the warm interpreter did not start")
        self.answer = {"ok": True, "pid": self.pid, "home": home, "env": env,
                       "ready": {"modules": ready.get("modules", []), "cwd": ready.get("cwd"),
                                 "environ": ready.get("environ", {})}}

    def alive(self):
        return self.proc.poll() is None

    def ask(self, request, fds=()):
        try:
            self.sock.sendmsg([marshal.dumps(request)],
                              [(socket.SOL_SOCKET, socket.SCM_RIGHTS,
                                b"".join(fd.to_bytes(4, sys.byteorder) for fd in fds))]
                              if fds else [])
            reply = self.sock.recv(_MAX_MSG)
        except OSError:  # wedged (a run can SIGSTOP it) or gone: never asked again
            self.close()
            raise
        if not reply:
            self.close()
            raise OSError("the warm interpreter is gone")
        answer = marshal.loads(reply)
        if type(answer) is not dict or "error" in answer:
            raise OSError(str(answer))
        return answer

    def close(self):
        try:
            self.sock.close()
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait()
        except OSError:
            pass
