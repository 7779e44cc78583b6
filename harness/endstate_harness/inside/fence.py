"""A warm run's walls, built by the run itself: the first part of the zygote's text.

Why: a warm interpreter (:mod:`endstate_harness.inside.zygote`) forks every run, so a run cannot
be started by bubblewrap the way a fresh command is. The interpreter lives behind bubblewrap
instead (its own user and network namespace, the system read-only, the scratch root in view),
and each run it forks, before any code of the run, builds what bubblewrap would have built for
a fresh command (:mod:`endstate_harness.sandbox.walls`):

* ``A``, the forked process (the harness watches and kills it by its host pid), makes a new
  user, mount, PID, network, IPC and UTS namespace and forks ``B``;
* ``B`` is process 1 of the new PID namespace: it brings loopback up, mounts the run's
  folders (bound first, then the scratch root, ``/tmp`` and ``/dev/shm`` covered with empty
  tmpfs, then the folders moved to their places), a ``/proc`` of its own (its kernel-wide
  parts read-only, as bubblewrap's are), and forks ``C``;
  when ``C`` ends, ``B`` ends what ``C`` left behind and passes its status up;
* ``C`` drops every capability (bounding set too, no new privileges) and becomes the run.

``A`` ends as ``C`` did (the same exit code, or the same signal). Whether the walls stand is
written (``+``, or ``-`` and why) on a pipe whose other end the zygote hands the harness with
the run's pid: a run whose walls failed never started anything, and the harness starts it again
fresh, walled by bubblewrap.

Stdlib only, Python 3.8+; ``ctypes`` is loaded by the zygote and taken out of ``sys.modules``
again, so a run finds it as unloaded as a fresh interpreter does.
"""

import os
import sys

_FENCE = {}  # type: dict
"""libc and the ctypes pieces to call it, once the zygote started walled (empty: not walled)."""

_NEWNS, _NEWUTS, _NEWIPC = 0x00020000, 0x04000000, 0x08000000
_NEWUSER, _NEWPID, _NEWNET = 0x10000000, 0x20000000, 0x40000000
_MS_RDONLY, _MS_NOSUID, _MS_NODEV, _MS_NOEXEC, _MS_REMOUNT = 0x1, 0x2, 0x4, 0x8, 0x20
_MS_BIND, _MS_MOVE, _MS_REC, _MS_PRIVATE = 0x1000, 0x2000, 0x4000, 0x40000
_PR_SET_PDEATHSIG, _PR_SET_DUMPABLE, _PR_CAPBSET_DROP = 1, 4, 24
_PR_SET_NO_NEW_PRIVS, _PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL = 38, 47, 4
_SIGKILL = 9


def _fence_load():
    """Load libc's ``unshare``, ``mount``, ``prctl`` and ``capset`` (in the zygote)."""
    before = set(sys.modules)
    import ctypes  # deferred: only a walled zygote loads it, and unloads it again below

    _FENCE.update(libc=ctypes.CDLL(None, use_errno=True), errno=ctypes.get_errno,
                  ulong=ctypes.c_ulong, u32=ctypes.c_uint32, u8=ctypes.c_uint8)
    for name in set(sys.modules) - before:
        del sys.modules[name]


def _fence_valid(spec):
    """Whether a spawn request's ``walls`` is what the harness sends (plain strings only)."""
    if type(spec) is not dict or type(spec.get("staging")) is not str:
        return False
    read_only = spec.get("proc_read_only")
    if type(read_only) is not list or not all(type(p) is str and p.startswith("/proc/")
                                             for p in read_only):
        return False
    covers, binds, keep = spec.get("covers"), spec.get("binds"), spec.get("keep", [])
    if type(covers) is not list or type(binds) is not list or len(binds) > 4:
        return False
    if type(keep) is not list or len(keep) > 4 or not all(
            type(k) is str and k.startswith("/") for k in keep):
        return False
    if not all(type(c) is str and c.startswith("/") for c in covers):
        return False
    return all(type(b) is list and len(b) == 2 and all(type(p) is str and p.startswith("/")
                                                       for p in b) for b in binds)


def _fence_call(result, what):
    if result != 0:
        errno = _FENCE["errno"]()
        raise OSError(errno, what + ": " + os.strerror(errno))


def _fence_prctl(*args):
    c_ulong = _FENCE["ulong"]
    return _FENCE["libc"].prctl(*[c_ulong(a) for a in args])


def _fence_mount(source, target, fstype, flags, data):
    def text(value):
        return None if value is None else os.fsencode(value)

    libc, c_ulong = _FENCE["libc"], _FENCE["ulong"]
    _fence_call(libc.mount(text(source), text(target), text(fstype), c_ulong(flags),
                           text(data)), "mount " + target)


def _fence_write(path, text):
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def _fence_say(fd, data):
    try:
        os.write(fd, data[:4000])
    except OSError:
        pass


def _fence(spec, keep, ready):
    """Build the walls (module docstring); returns only in ``C``, the run. ``keep`` are the
    run's three descriptors; ``ready`` is written ``+`` once the walls stand, ``-why`` if not."""
    try:
        os.setsid()  # A leads a group of its own: the harness kills the run by it
        uid, gid = os.getuid(), os.getgid()
        _fence_call(_FENCE["libc"].unshare(_NEWUSER | _NEWNS | _NEWPID | _NEWNET | _NEWIPC
                                      | _NEWUTS), "unshare")
        _fence_write("/proc/self/setgroups", "deny")
        _fence_write("/proc/self/uid_map", f"{uid} {uid} 1")
        _fence_write("/proc/self/gid_map", f"{gid} {gid} 1")
        status_r, status_w = os.pipe()
        b = os.fork()
    except BaseException as exc:
        _fence_say(ready, ("-" + str(exc)).encode("utf-8", "replace"))
        os._exit(125)
    if b:
        for fd in [*keep, ready, status_w]:
            os.close(fd)
        _fence_relay(b, status_r)
    os.close(status_r)
    try:
        _fence_prctl(_PR_SET_PDEATHSIG, _SIGKILL)
        _fence_prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)  # the run can never trace process 1
        _fence_loopback()
        _fence_mounts(spec)
        c = os.fork()
    except BaseException as exc:
        _fence_say(ready, ("-" + str(exc)).encode("utf-8", "replace"))
        os._exit(125)
    if c:
        for fd in [*keep, ready]:
            os.close(fd)
        _fence_reap(c, status_w)
    os.close(status_w)
    try:
        _fence_prctl(_PR_SET_DUMPABLE, 1, 0, 0, 0)  # as a fresh process is
        for cap in range(64):
            _fence_prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0)  # past the last one: EINVAL, fine
        _fence_prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
        _fence_call(_fence_prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
        u32 = _FENCE["u32"]
        _fence_call(_FENCE["libc"].capset((u32 * 2)(0x20080522, 0), (u32 * 6)()), "capset")
    except BaseException as exc:
        _fence_say(ready, ("-" + str(exc)).encode("utf-8", "replace"))
        os._exit(125)
    _fence_say(ready, b"+")
    os.close(ready)


def _fence_loopback():
    """In ``B``: bring ``lo`` up, as bubblewrap does for a fresh command (a new network
    namespace starts with it down)."""
    libc = _FENCE["libc"]
    fd = libc.socket(2, 2, 0)  # AF_INET, SOCK_DGRAM
    if fd < 0:
        _fence_call(-1, "socket")
    try:
        ifreq = (_FENCE["u8"] * 40)(*b"lo")
        _fence_call(libc.ioctl(fd, 0x8913, ifreq), "SIOCGIFFLAGS lo")  # its flags
        flags = int.from_bytes(bytes(ifreq[16:18]), sys.byteorder) | 0x1 | 0x40  # UP, RUNNING
        ifreq[16:18] = list(flags.to_bytes(2, sys.byteorder))
        _fence_call(libc.ioctl(fd, 0x8914, ifreq), "SIOCSIFFLAGS lo")
    finally:
        os.close(fd)


_ST_TO_MS = ((os.ST_NOSUID, 2), (os.ST_NODEV, 4), (os.ST_NOEXEC, 8), (os.ST_NOATIME, 1024),
             (os.ST_NODIRATIME, 2048), (os.ST_RELATIME, 1 << 21))


def _mount_flags(folder):
    """The mount flags of the mount ``folder`` is on, as ``mount(2)`` takes them."""
    have = os.statvfs(folder).f_flag
    return sum(ms for st, ms in _ST_TO_MS if have & st)


def _fence_mounts(spec):
    """In ``B``: the run's folders where the harness asked, the rest of the scratch root out
    of view, a private ``/tmp`` and ``/dev/shm``, a ``/proc`` of this PID namespace."""
    _fence_mount(None, "/", None, _MS_REC | _MS_PRIVATE, None)
    staging = spec["staging"]
    binds = spec["binds"]
    for slot, (source, _target) in enumerate(binds):
        _fence_mount(source, f"{staging}/{slot}", None, _MS_BIND | _MS_REC, None)
    keep = [k for k in spec.get("keep", []) if os.path.isdir(k)]
    locked = {}
    for slot, folder in enumerate(keep, start=4):  # system folders under a cover: kept
        locked[slot] = _mount_flags(folder)
        _fence_mount(folder, f"{staging}/{slot}", None, _MS_BIND | _MS_REC, None)
    for cover in spec["covers"]:
        if os.path.isdir(cover):
            mode = "1777" if cover in ("/tmp", "/dev/shm") else "0755"
            _fence_mount("tmpfs", cover, "tmpfs", _MS_NOSUID | _MS_NODEV, "mode=" + mode)
    for slot, (_source, target) in enumerate(binds):
        os.makedirs(target, exist_ok=True)
        _fence_mount(f"{staging}/{slot}", target, None, _MS_MOVE, None)
    for slot, folder in enumerate(keep, start=4):  # on top of the covers and the binds
        os.makedirs(folder, exist_ok=True)
        _fence_mount(f"{staging}/{slot}", folder, None, _MS_MOVE, None)
        # read-only again, with the flags the zygote's bind has locked (a remount must keep)
        _fence_mount(None, folder, None, _MS_BIND | _MS_REMOUNT | _MS_RDONLY | _MS_REC
                     | locked[slot], None)
        if not os.statvfs(folder).f_flag & os.ST_RDONLY:
            raise OSError(1, "a kept system folder is writable", folder)
    for cover in spec["covers"]:  # one inside a kept folder, shown again with it: covered
        if any(cover.startswith(k.rstrip("/") + "/") for k in keep) and os.path.isdir(cover):
            _fence_mount("tmpfs", cover, "tmpfs", _MS_NOSUID | _MS_NODEV, "mode=0755")
    _fence_mount("proc", "/proc", "proc", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC, None)
    for part in spec["proc_read_only"]:  # what reaches the whole kernel: read-only
        if os.path.exists(part):
            _fence_mount(part, part, None, _MS_BIND | _MS_REC, None)
            _fence_mount(None, part, None, _MS_BIND | _MS_REMOUNT | _MS_RDONLY | _MS_REC, None)


def _fence_reap(child, status_w):
    """``B``, process 1: reap until the run ends, end what it left, pass its status up.

    ``B`` leaves ``A``'s process group only once nothing else of the namespace is alive, so
    the harness does not wait for the namespaces to be torn down after the run's end."""
    os.closerange(0, 3)
    status = None
    while True:
        try:
            pid, raw = os.waitpid(-1, 0)
        except ChildProcessError:
            break
        except InterruptedError:
            continue
        if pid == child:
            status = raw
            break
    try:
        os.kill(-1, _SIGKILL)  # from process 1: everything else of this PID namespace
    except OSError:
        pass
    while True:
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            break
        except InterruptedError:
            continue
    os.setsid()
    if status is not None:
        _fence_say(status_w, status.to_bytes(4, "little", signed=True))
    os._exit(0)


def _fence_relay(child, status_r):
    """``A``: end as the run did, once ``B`` says how (``B`` is reaped by whoever adopts it;
    what is left of it is its namespaces' teardown)."""
    os.closerange(0, 3)
    data = b""
    while True:
        try:
            part = os.read(status_r, 4)
        except InterruptedError:
            continue
        if not part:
            break
        data += part
    if len(data) == 4:
        status = int.from_bytes(data, "little", signed=True)
        if os.WIFEXITED(status):
            os._exit(os.WEXITSTATUS(status))
        signal = os.WTERMSIG(status) if os.WIFSIGNALED(status) else _SIGKILL
    else:
        signal = _SIGKILL  # B was killed: so was the run
    import _signal  # deferred: only A, on its way out, needs it

    _fence_prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)  # the run dumped its core already, if any
    try:
        _signal.signal(signal, _signal.SIG_DFL)
    except (OSError, ValueError, RuntimeError):
        pass
    os.kill(os.getpid(), signal)
    os._exit(128 + signal)
