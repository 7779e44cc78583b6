"""The warm interpreter that runs *inside* a sandbox: shipped as source, never imported.
Imports nothing beyond ``_io``, ``_socket`` and ``marshal``; Python 3.8+. Started ``walled``
(behind bubblewrap, by the local sandbox), every run builds walls of its own before anything
of it runs (:mod:`endstate_harness.inside.fence`, the first part of this text).
"""

import _io
import _socket
import marshal
import os
import sys

if "_fence" not in globals():  # imported in a test; shipped, fence.py's text comes first
    from endstate_harness.inside.fence import _FENCE, _fence, _fence_load, _fence_valid

_SOCKET_MODULE_PRELOADED = False
_PRCTL = None
"""``prctl`` when the zygote was started ``private`` (inside a container whose runs share its
uid): the zygote is then non-dumpable, so no run can ptrace it or read its memory, and each
forked run makes itself dumpable again, as a fresh process is."""


def _private():
    global _PRCTL
    before = set(sys.modules)
    import ctypes  # deferred: only a private zygote loads it, and unloads it again below

    prctl = ctypes.CDLL(None, use_errno=True).prctl
    if prctl(4, 0, 0, 0, 0) != 0:  # PR_SET_DUMPABLE, 0
        raise OSError("prctl(PR_SET_DUMPABLE) failed")
    _PRCTL = prctl
    for name in set(sys.modules) - before:  # a run finds ctypes as unloaded as a fresh one
        del sys.modules[name]


def _fds_of(ancillary):
    fds = []
    for level, kind, payload in ancillary:
        if level == _socket.SOL_SOCKET and kind == _socket.SCM_RIGHTS:
            usable = len(payload) - len(payload) % 4
            for i in range(0, usable, 4):
                fds.append(int.from_bytes(payload[i:i + 4], sys.byteorder, signed=True))
    return fds


def _exit_code(status):
    if os.WIFSIGNALED(status):
        return -os.WTERMSIG(status)
    if os.WIFEXITED(status):
        return os.WEXITSTATUS(status)
    return -1


def _valid_spawn(req, fds):
    if type(req) is not dict or req.get("op") != "spawn" or len(fds) != 3:
        return False
    if bool(_FENCE) != ("walls" in req):
        return False  # a walled zygote forks walled runs only, and only it does
    if _FENCE and not _fence_valid(req["walls"]):
        return False
    if type(req.get("cwd")) is not str or type(req.get("argv")) is not list:
        return False
    if type(req.get("orig_argv")) is not list or type(req.get("env")) is not dict:
        return False
    if req.get("mode") not in ("-c", "-m") or type(req.get("target")) is not str:
        return False
    strings = list(req["argv"]) + list(req["orig_argv"]) + list(req["env"]) + list(
        req["env"].values())
    return all(type(s) is str for s in strings)


_CODES = {}  # type: dict[str, object]


def _compiled(req):
    """The ``-c`` program compiled once per text, exactly as the interpreter compiles it; None
    when compiling it fails or warns, so that the run compiles it itself and reports that as
    a fresh process would."""
    source = req["target"]
    code = _CODES.get(source)
    if code is not None:
        return code
    saved, sys.stderr = sys.stderr, _io.StringIO()
    try:
        code = compile(source, "<string>", "exec")
        warned = sys.stderr.getvalue()
    except BaseException:
        return None
    finally:
        sys.stderr = saved
    if warned:
        return None
    if len(_CODES) >= 8:
        _CODES.clear()
    _CODES[source] = code
    return code


def _remove_own_folder(folder):
    """The harness is gone (killed, say, with no chance to tidy up): the zygote's folder, which
    it made, goes with the zygote. Never follows a link; whatever cannot go is left."""
    def remove(path):
        try:
            entries = list(os.scandir(path))
        except OSError:
            return
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    remove(entry.path)
                    os.rmdir(entry.path)
                else:
                    os.unlink(entry.path)
            except OSError:
                pass
    if os.path.basename(folder).startswith("endstate-zygote-"):
        remove(folder)
        try:
            os.chdir("/")
            os.rmdir(folder)
        except OSError:
            pass


def _gone(folder):
    _remove_own_folder(folder)
    os._exit(0)


def _zygote():
    """Serve until the socket closes; returns ``(request, fds, code)`` only in a forked run."""
    global _SOCKET_MODULE_PRELOADED
    sock = _socket.socket(fileno=int(sys.argv[1]))
    if sys.argv[3:4] == ["private"]:
        _private()  # or fail to start: the harness then runs fresh processes
    elif sys.argv[3:4] == ["walled"]:
        _fence_load()  # each run builds its own walls (the first part of this text)
    for name in [n for n in sys.argv[2].split(",") if n]:
        try:
            __import__(name)
        except BaseException:  # what cannot load here loads (or fails) in the run itself
            pass
    _SOCKET_MODULE_PRELOADED = "_socket" in sys.argv[2].split(",")
    tops = sorted({n.partition(".")[0] for n in sys.modules})
    sock.send(marshal.dumps({"ready": True, "modules": tops, "cwd": os.getcwd(),
                             "environ": dict(os.environ), "walled": bool(_FENCE)}))
    space = _socket.CMSG_SPACE(4 * 8)
    folder = _FOLDER
    while True:
        try:
            data, ancillary, _flags, _addr = sock.recvmsg(1 << 22, space)
        except OSError:
            _gone(folder)
        fds = _fds_of(ancillary)
        if not data:
            _gone(folder)
        try:
            req = marshal.loads(data)
        except Exception:
            req = None
        if type(req) is dict and req.get("op") == "reap" and type(req.get("pid")) is int:
            for fd in fds:
                os.close(fd)
            try:
                _, status = os.waitpid(req["pid"], 0)
                answer = {"status": _exit_code(status)}
            except ChildProcessError:
                answer = {"error": "no such run"}
            sock.send(marshal.dumps(answer))
            continue
        if not _valid_spawn(req, fds):
            for fd in fds:
                os.close(fd)
            sock.send(marshal.dumps({"error": "bad request"}))
            continue
        code = _compiled(req) if req["mode"] == "-c" else None
        ready = os.pipe() if _FENCE else None
        try:
            pid = os.fork()
        except OSError as exc:
            for fd in fds + list(ready or ()):
                os.close(fd)
            sock.send(marshal.dumps({"error": "fork: " + str(exc)}))
            continue
        if pid == 0:
            sock.close()
            if ready is not None:
                os.close(ready[0])
                _fence(req["walls"], fds, ready[1])  # returns only in the walled run
            return req, fds, code
        for fd in fds:
            os.close(fd)
        if ready is None:
            sock.send(marshal.dumps({"pid": pid}))
            continue
        # the harness reads whether the run's walls stood; the zygote does not wait for it
        os.close(ready[1])
        rights = (_socket.SOL_SOCKET, _socket.SCM_RIGHTS, ready[0].to_bytes(4, sys.byteorder))
        sock.sendmsg([marshal.dumps({"pid": pid})], [rights])
        os.close(ready[0])


def _become(req, fds):
    """In the forked run: what a fresh ``PYTHON FLAGS -c/-m …`` in ``cwd`` would be."""
    zygote_cwd = _FOLDER
    if _PRCTL is not None:
        _PRCTL(4, 1, 0, 0, 0)  # PR_SET_DUMPABLE, 1: as a fresh process is
    os.setsid()
    moved = [os.dup(fd) if fd <= 2 else fd for fd in fds]  # none of them clobbers another
    for target, fd in enumerate(moved):
        os.dup2(fd, target)
    os.closerange(3, 1 << 16)  # a fresh process has nothing but its three streams
    os.chdir(req["cwd"])
    os.environ.clear()
    os.environ.update(req["env"])
    main = type(sys)("__main__")
    main.__dict__.update({
        "__builtins__": sys.modules["builtins"], "__loader__": None, "__spec__": None,
        "__package__": None, "__annotations__": {},
    })
    loader = getattr(sys.modules.get("_frozen_importlib"), "BuiltinImporter", None)
    main.__loader__ = loader
    sys.modules["__main__"] = main
    if sys.path and sys.path[0] == zygote_cwd:  # -m puts the starting folder first
        sys.path[0] = req["cwd"]
    sys.argv = list(req["argv"])
    if hasattr(sys, "orig_argv"):
        sys.orig_argv = list(req["orig_argv"])
    if not _SOCKET_MODULE_PRELOADED:
        sys.modules.pop("_socket", None)
    return main


_FOLDER = os.getcwd()
"""The folder the zygote started in (its harness may remove it once the zygote is ready)."""
_request, _fds, _code = _zygote()
_main = _become(_request, _fds)
try:
    if _request["mode"] == "-c":
        if _code is None:
            _code = compile(_request["target"], "<string>", "exec")
        exec(_code, _main.__dict__)
    else:
        import runpy

        runpy._run_module_as_main(_request["target"], True)  # type: ignore[attr-defined]
except SystemExit:
    raise
except BaseException as _exc:  # the interpreter's own report, without this file's frame
    _tb = _exc.__traceback__
    _tb = _tb.tb_next if _tb is not None else None
    sys.excepthook(type(_exc), _exc.with_traceback(_tb), _tb)
    raise SystemExit(1) from None
