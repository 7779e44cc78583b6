"""The runner that lives *inside* a Docker sandbox: shipped as source, never imported.

Started once per container, it starts each command itself; its wire format is in
docs/architecture.md (appendix). Standard library only, Python 3.8+.
"""

import json
import os
import selectors
import signal
import socket
import subprocess
import sys
import time

_DRAIN_S = 2.0
"""How long a command's streams may stay open after it ended (something it started still
holds them) before they are closed on it."""

_zygotes = {}  # type: dict[str, _Zygote]

_KEEPER_S = 10.0
"""How long the keeper may take to make itself non-dumpable, under load, before the runner
says it is not (the host then freezes the container whenever it acts on the tree)."""

if "_reset" not in globals():  # for linters; shipped, the other parts' text comes first
    from endstate_harness.inside.box import (
        _KEEPER,
        _digest,
        _end_others,
        _kill_group,
        _nondumpable,
        _reset,
    )
    from endstate_harness.inside.box_zygote import _Zygote


_SOCK = [None]  # type: list[socket.socket | None]
"""The host's socket, when the runner talks over one (descriptors can be handed over)."""

_IO = [0, 1]
"""Where requests come from and messages go: the exec's stdin and stdout, or (when the host
offered one) a UNIX socket straight to the host, which spares every message the daemon's
relay (~0.4 ms a round trip)."""


def _connect(path):
    """The host's socket, when it offered one and it answers; else None (stdio then)."""
    if not path:
        return None
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(path)
    except OSError:
        conn.close()
        return None
    return conn


def _send(kind, payload):
    data = kind + len(payload).to_bytes(4, "big") + payload
    view = memoryview(data)
    while view:
        view = view[os.write(_IO[1], view):]


def _send_json(kind, value):
    _send(kind, json.dumps(value).encode())


def _own_pids():
    """This runner and its zygotes: what a sweep spares besides the keeper (process 1). Held
    in this process's memory only (a zygote that ended is reaped here by ``alive``, so its
    number can never be another's while it is spared)."""
    pids = [os.getpid()]
    pids.extend(z.pid for z in _zygotes.values() if z.alive())
    return pids


class _Command:
    """What a started command has in common, fresh or forked: its streams, its stdin."""

    def __init__(self, stdin_fd, out_fd, err_fd):
        self.stdin_fd = stdin_fd
        self.pending = bytearray()
        self.close_pending = False
        self.open = {out_fd: b"O", err_fd: b"E"}
        self.ended = None

    def write(self, sel, data):
        if self.stdin_fd is None:
            return
        self.pending.extend(data)
        self._flush(sel)

    def close_stdin(self, sel):
        self.close_pending = True
        self._flush(sel)

    def _flush(self, sel):
        """Write what the command's stdin takes now; the rest when it is writable again (a
        command that stops reading never blocks the runner)."""
        fd = self.stdin_fd
        if fd is None:
            return
        try:
            while self.pending:
                n = os.write(fd, self.pending)
                del self.pending[:n]
        except BlockingIOError:
            pass
        except OSError:  # it stopped reading for good
            self.pending.clear()
            self.close_pending = True
        registered = fd in sel.get_map()
        if self.pending and not registered:
            sel.register(fd, selectors.EVENT_WRITE, b"stdin")
        elif not self.pending:
            if registered:
                sel.unregister(fd)
            if self.close_pending:
                os.close(fd)
                self.stdin_fd = None

    def on_writable(self, sel):
        self._flush(sel)

    def on_exit(self, sel):
        """Its leader ended (only a forked run watches for that)."""

    def hand_over(self):
        """Send the host the command's stdout (to read) and stdin (to write) themselves, and
        keep neither: a local process there (the judge) then talks to the command with no
        relay, here or on the host. Only over the host's socket (descriptors cross it)."""
        sock = _SOCK[0]
        if sock is None or self.stdin_fd is None:
            _send(b"F", b"")
            return
        out_fd = next(fd for fd, tag in self.open.items() if tag == b"O")
        fds = [out_fd, self.stdin_fd]
        os.set_blocking(self.stdin_fd, True)  # shared with the host's copy: as a pipe is
        data = b"F" + (1).to_bytes(4, "big") + b"1"  # "1": the descriptors come with it
        try:
            sock.sendmsg([data], [(socket.SOL_SOCKET, socket.SCM_RIGHTS,
                                   b"".join(fd.to_bytes(4, sys.byteorder) for fd in fds))])
        except OSError:
            os.set_blocking(self.stdin_fd, False)
            _send(b"F", b"")  # none: the host relays, as without a socket
            return
        for fd in fds:
            os.close(fd)
        del self.open[out_fd]
        self.stdin_fd = None

    def release(self, sel):
        for fd in list(self.open):
            sel.unregister(fd)
            os.close(fd)
        self.open.clear()
        if self.stdin_fd is not None:
            if self.stdin_fd in sel.get_map():
                sel.unregister(self.stdin_fd)
            os.close(self.stdin_fd)
            self.stdin_fd = None


def _with_spared(req):
    """The request's argv with the runner's own pids at ``spare_arg`` (the wrapper's sweep
    spares them); they come from this runner's memory, never from the request's text."""
    argv = list(req["argv"])
    index = req.get("spare_arg")
    if type(index) is int and 0 <= index < len(argv):
        argv[index] = " ".join(str(p) for p in _own_pids())
    return argv


class _Fresh(_Command):
    """A command started with fork and exec (the shell wrapper, or a reset)."""

    def __init__(self, req):
        self.proc = subprocess.Popen(
            _with_spared(req), cwd=req["cwd"],
            stdin=subprocess.PIPE if req.get("stdin") else subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            start_new_session=True, close_fds=True,
        )
        # Raw descriptors of its own, as a forked run has: closed exactly once, by the runner.
        fds = [None if f is None else os.dup(f.fileno())
               for f in (self.proc.stdin, self.proc.stdout, self.proc.stderr)]
        for f in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if f is not None:
                f.close()
        self.proc.stdin = self.proc.stdout = self.proc.stderr = None
        if fds[0] is not None:
            os.set_blocking(fds[0], False)
        super().__init__(fds[0], fds[1], fds[2])

    def register(self, sel):
        pass

    def timeout(self):
        if self.ended is None:
            return 0.2  # also look whether it ended while something holds its streams
        return max(0.0, self.ended + _DRAIN_S - time.monotonic())

    def step(self, sel):
        if not self.open and self.ended is None:
            try:
                self.proc.wait(_DRAIN_S)  # its streams close as it exits
            except subprocess.TimeoutExpired:
                pass
        if self.ended is None and self.proc.poll() is not None:
            # The wrapper swept already, unless the command stopped or killed it (it may
            # trace the wrapper, never this runner): sweep again, from this memory.
            _end_others(_own_pids())
            self.ended = time.monotonic()
        if self.ended is None or (self.open and time.monotonic() < self.ended + _DRAIN_S):
            return None
        self.release(sel)
        return {"code": self.proc.returncode, "warm": False}


class _Warm(_Command):
    """A run forked by a zygote; its end seen through a pidfd (it is the zygote's child)."""

    def __init__(self, zygote, req):
        theirs = []  # type: list[int]
        ours = []  # type: list[int | None]
        try:
            if req.get("stdin"):
                r, w = os.pipe()
                theirs.append(r)
                ours.append(w)
                os.set_blocking(w, False)
            else:
                theirs.append(os.open(os.devnull, os.O_RDONLY))
                ours.append(None)
            for _ in range(2):
                r, w = os.pipe()
                theirs.append(w)
                ours.append(r)
            self.pid = int(zygote.ask(req["spawn"], theirs)["pid"])
        except BaseException:
            for fd in ours:
                if fd is not None:
                    os.close(fd)
            raise
        finally:
            for fd in theirs:
                os.close(fd)
        self.zygote = zygote
        self.pidfd = os.pidfd_open(self.pid)
        self.deadline = time.monotonic() + float(req["limit"])
        super().__init__(ours[0], ours[1], ours[2])

    def register(self, sel):
        sel.register(self.pidfd, selectors.EVENT_READ, b"exit")

    def on_exit(self, sel):
        """The run's leader ended: its group and everything else it left go, as after a
        command of the shell wrapper."""
        sel.unregister(self.pidfd)
        _kill_group(self.pid)
        _end_others(_own_pids())
        self.ended = time.monotonic()

    def timeout(self):
        if self.ended is None:
            return max(0.0, self.deadline - time.monotonic())
        return max(0.0, self.ended + _DRAIN_S - time.monotonic())

    def step(self, sel):
        if self.ended is None:
            if time.monotonic() >= self.deadline:
                _kill_group(self.pid)  # what timeout(1) does at the limit
                self.deadline = time.monotonic() + 0.05  # until its end shows
            return None
        if self.open and time.monotonic() < self.ended + _DRAIN_S:
            return None
        self.release(sel)
        os.close(self.pidfd)
        try:
            code = int(self.zygote.ask({"op": "reap", "pid": self.pid})["status"])
        except (OSError, ValueError, KeyError, TypeError):
            code = -signal.SIGKILL  # the zygote is gone, and with it the status
        return {"code": code, "warm": True}


def _start_zygote(req):
    key = req["key"]
    old = _zygotes.pop(key, None)
    if old is not None:
        old.close()
    try:
        zygote = _Zygote(req)
    except (OSError, ValueError, TypeError, KeyError) as exc:
        _send_json(b"Z", {"ok": False, "error": str(exc)})
        return
    _zygotes[key] = zygote
    _send_json(b"Z", zygote.answer)


def _start_warm(req):
    """The forked run, or (zygote gone, HOME holding ``.local``…) the fallback command."""
    zygote = _zygotes.get(req.get("key"))
    usable = zygote is not None and zygote.alive()
    if usable and any(os.path.lexists(p) for p in req.get("absent", ())):
        usable = False
    if zygote is not None and usable:
        try:
            return _Warm(zygote, req)
        except (OSError, ValueError, KeyError, TypeError):
            if not zygote.alive():
                _zygotes.pop(req.get("key"), None)
    return _Fresh(req["fallback"])


def _serve():
    sel = selectors.DefaultSelector()
    sel.register(_IO[0], selectors.EVENT_READ, b"host")
    if _IO[0] != 0:
        sel.register(0, selectors.EVENT_READ, b"host")  # the exec's stdin: its end is the host's
    inbox = bytearray()
    run = None  # type: _Fresh | _Warm | None
    while True:
        for key, _ in sel.select(None if run is None else run.timeout()):
            tag = key.data
            if tag == b"host":
                data = os.read(key.fd, 1 << 16)
                if not data:  # the host is gone: so is whatever it started
                    _end_others(_own_pids())
                    return
                if key.fd == _IO[0]:
                    inbox.extend(data)
            elif run is None:  # only the host's streams are watched between commands
                continue
            elif tag == b"exit":
                run.on_exit(sel)
            elif tag == b"stdin":
                run.on_writable(sel)
            else:
                data = os.read(key.fd, 1 << 16)
                if data:
                    _send(tag, data)
                else:
                    sel.unregister(key.fd)
                    os.close(key.fd)
                    del run.open[key.fd]
        while len(inbox) >= 5:
            size = int.from_bytes(inbox[1:5], "big")
            if len(inbox) < 5 + size:
                break
            kind, payload = bytes(inbox[:1]), bytes(inbox[5:5 + size])
            del inbox[:5 + size]
            if kind in (b"R", b"W", b"Z", b"D", b"Q") and run is not None:
                _send_json(b"!", {"error": "a command is still running"})
            elif kind in (b"R", b"W"):
                try:
                    req = json.loads(payload)
                    run = _Fresh(req) if kind == b"R" else _start_warm(req)
                    if req.get("direct"):
                        run.hand_over()
                except (OSError, ValueError, TypeError, KeyError) as exc:
                    _send_json(b"!", {"error": str(exc)})
                    continue
                for fd, tag in run.open.items():
                    sel.register(fd, selectors.EVENT_READ, tag)
                run.register(sel)
            elif kind == b"Z":
                try:
                    _start_zygote(json.loads(payload))
                except (ValueError, TypeError, KeyError) as exc:
                    _send_json(b"Z", {"ok": False, "error": str(exc)})
            elif kind == b"P":
                _send(b"P", b"")  # alive, and not paused: a paused container cannot answer
            elif kind == b"K":  # kill every process but the spared ones
                quiet = _end_others(_own_pids())
                if payload == b"ack":  # the host acts on the tree next: it waits for this
                    _send_json(b"K", {"quiet": quiet})
            elif kind == b"D":
                _send_json(b"D", {"digest": _digest()})
            elif kind == b"Q":
                try:
                    _send_json(b"D", {"digest": _reset(_own_pids())})
                except (OSError, ValueError, TypeError, KeyError) as exc:
                    _send_json(b"D", {"digest": None, "error": str(exc)})
            elif run is None:
                continue
            elif kind == b"I":
                run.write(sel, payload)
            elif kind == b"C":
                run.close_stdin(sel)
        if run is not None:
            result = run.step(sel)
            if result is not None:
                _send_json(b"X", result)
                run = None


def _keeper():
    """Whether process 1 is the keeper, non-dumpable (so nothing a command does can take it
    over), waiting a moment for it: it is started with the container, and makes itself so
    before anything of a command runs. Its environment is unreadable to this uid then."""
    deadline = time.monotonic() + _KEEPER_S
    while True:
        try:
            with open(f"/proc/{_KEEPER}/environ", "rb"):
                pass
        except PermissionError:
            return True
        except OSError:
            return False
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.005)


def main():
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        _nondumpable()
    except (OSError, ImportError, AttributeError) as exc:
        sys.stderr.write(f"endstate agent: {exc}\n")
        sys.exit(3)
    conn = _connect(sys.argv[1] if len(sys.argv) > 1 else "")
    _send_json(b"H", {"pid": os.getpid(), "environ": dict(os.environ), "keeper": _keeper(),
                      "sh": os.path.basename(os.path.realpath("/bin/sh")),
                      "pidfd": hasattr(os, "pidfd_open"), "socket": conn is not None})
    if conn is not None:
        _IO[:] = [conn.fileno(), conn.fileno()]
        _SOCK[0] = conn
    _serve()


main()
