"""What keeps one test of the judge's child from seeing another's: shipped as source between the
wire format and :mod:`endstate_harness.inside.judge_child`; standard library only, Python 3.8+.

The child forks a process per test (and per class or module whose fixtures call the code
under test) from the process that imported the package; the fork's memory dies with it. What a
test's process can change that outlives it is put back here by the process it was forked from,
once it has ended (:class:`Ground`): every process it left is killed, the files of the folders
it may write are brought back to what they were before the first fork, and the signals it sent
upwards are dropped unseen.
"""

import fcntl
import os
import signal
import stat

SNAPSHOT_BYTES = 64 << 20
"""Most bytes of file contents a forking process keeps to put back (a changed file beyond them
cannot be put back, and the child says so: the run fails rather than carry it on)."""
MAX_ENTRIES = 100000
"""Most names the writable folders may hold (beyond them the tests are not isolated: said)."""
STRAY_ROUNDS = 200
"""Rounds of killing a test's leftover processes (each round kills every one then alive)."""

_PR_SET_DUMPABLE = 4
_PR_SET_CHILD_SUBREAPER = 36


def writable_roots(cwd, environ, private_tmp):
    """The folders the code under test may write and a test could leave something in: the
    tree, ``TMPDIR`` and ``HOME`` as the harness set them when the child started (before any
    code under test ran), and ``/tmp``, ``/dev/shm`` and ``/dev/mqueue`` where the harness
    says they are the sandbox's own (``private_tmp``: behind the walls, in a container).
    Without walls ``/tmp`` is the host's, which is never a root: it holds other processes'
    files."""
    found = []
    for path in (cwd, environ.get("TMPDIR"), environ.get("HOME")):
        if path and os.path.isabs(path) and os.path.isdir(path):
            found.append(os.path.realpath(path))
    if private_tmp:
        found.extend(p for p in ("/tmp", "/dev/shm", "/dev/mqueue") if os.path.isdir(p))
    roots = []  # type: list[str]
    for path in sorted(set(found), key=len):
        if path != "/" and not any(path.startswith(r.rstrip("/") + "/") for r in roots):
            roots.append(path)
    return roots


class Ground:
    """One forking process's view of what its forks may change outside themselves, taken just
    before its first fork; :meth:`put_back` after each fork ended."""

    def __init__(self, roots, known=(), ipc=False):
        self.roots = roots
        self.known = frozenset(known)
        """The descriptors open before any code under test ran: the harness's, the wire's."""
        self.ipc = ipc
        """Whether the System V IPC tables are the sandbox's own (an IPC namespace of its own,
        behind the walls or in a container): then what a test's process made there goes."""
        self.shot = None
        """path -> (kind, mode, identity, payload), every name under the roots."""
        self.tables = None
        self.ready_once = False
        self.ran = True
        """Whether code under test may have run here since the last look for threads and
        shared memory (the server says so; a process that only forks runs none)."""

    def fresh(self):
        """The ground of a process just forked (it takes its own view when it forks)."""
        return Ground(self.roots, self.known, self.ipc)

    def prepare(self):
        """Before a fork: None when the forks can be isolated, else why not."""
        if not self.ready_once:
            _prctl(_PR_SET_CHILD_SUBREAPER, 1)  # a fork's orphans come back here, to be ended
            _prctl(_PR_SET_DUMPABLE, 0)  # a fork may not read or write this process's memory
            self.ready_once = True
        if self.ran:
            left = _threads() - 1
            shared = _shared_mappings()
            what = (f"{left} threads running" if left > 0 else
                    f"memory mapped shared and writable ({shared})" if shared else None)
            if what is not None:
                return (f"the code under test left {what} in the process the tests are forked "
                        "from: a test could leave state there for the next")
            self.ran = False
        if self.shot is None:
            self.tables = _ipc_tables() if self.ipc else {}
            self.shot = {}
            kept = [0]
            for root in self.roots:
                if not _walk(root, self.shot, kept):
                    self.shot = None
                    return f"more than {MAX_ENTRIES} names in {root}: the tests cannot be isolated"
        return None

    def put_back(self):
        """After a fork ended: its processes ended, the folders as they were. None, or why
        they could not be."""
        why = end_strays()
        if why is not None:
            return why
        if self.shot is None:
            return None
        if self.ipc and self.tables is not None:
            why = _remove_ipc(self.tables)
            if why is not None:
                return why
        return _restore(self.roots, self.shot)


def after_fork(ground):
    """In a fork, at once: its own descriptors (:func:`_privatise`), its own view, and its
    memory readable as any process's is."""
    _prctl(_PR_SET_DUMPABLE, 1)
    _privatise(ground.known)
    return ground.fresh()


def open_fds():
    """The descriptors open now (not the one that lists them: closed again, it fails fstat)."""
    found = []  # type: list[int]
    try:
        names = os.listdir("/proc/self/fd")
    except OSError:
        return found
    for name in names:
        try:
            os.fstat(int(name))
        except (OSError, ValueError):
            continue
        found.append(int(name))
    return found


def _privatise(known):
    """Every descriptor the code under test opened in the process this one was forked from
    (its file position, its flags, a pipe's or socket's buffer are shared with that process,
    and so with every later fork) replaced by one of this process's own: a named file or
    folder opened again (the same file, the same position and flags, its contents put back
    after the test with the folders'), the ends of one pipe by the ends of a new pipe (empty),
    anything else (a socket, an event, a memory file, a file no longer named) by
    ``/dev/null``."""
    pipes = {}  # type: dict
    for fd in open_fds():
        if fd in known:
            continue
        try:
            st = os.fstat(fd)
            kind = stat.S_IFMT(st.st_mode)
            flags = fcntl.fcntl(fd, fcntl.F_GETFL) & (3 | os.O_APPEND | os.O_NONBLOCK)
            if kind == stat.S_IFIFO:
                pipes.setdefault((st.st_dev, st.st_ino), []).append((fd, flags))
                continue
            target = os.readlink(f"/proc/self/fd/{fd}")
            if kind in (stat.S_IFREG, stat.S_IFDIR) and target.startswith("/") and not (
                    target.endswith(" (deleted)") or target.startswith("/memfd:")):
                own = os.open(f"/proc/self/fd/{fd}", flags | os.O_CLOEXEC)
                os.lseek(own, os.lseek(fd, 0, os.SEEK_CUR), os.SEEK_SET)
            else:
                own = os.open(os.devnull, os.O_RDWR | os.O_CLOEXEC)
            _replace(fd, own, None)
        except OSError:
            _replace(fd, None, None)
    for ends in pipes.values():
        read, write = os.pipe()
        for fd, flags in ends:
            _replace(fd, read if flags & 3 == os.O_RDONLY else write, flags & os.O_NONBLOCK)
        os.close(read)
        os.close(write)


def _replace(fd, own, nonblocking):
    """``fd`` made a copy of ``own`` (closed after, unless a pipe's end), as inheritable as it
    was; None: of ``/dev/null``."""
    try:
        inheritable = os.get_inheritable(fd)
        if own is None:
            own = os.open(os.devnull, os.O_RDWR | os.O_CLOEXEC)
            nonblocking = None
        os.dup2(own, fd, inheritable=inheritable)
        if nonblocking is not None:
            os.set_blocking(fd, not nonblocking)
        else:
            os.close(own)
    except OSError:
        try:
            os.close(fd)
        except OSError:
            pass


def _shared_mappings():
    """The writable shared mappings of this process (a fork shares their pages with it)."""
    found = []  # type: list[str]
    try:
        with open("/proc/self/maps", "rb") as maps:
            for line in maps:
                fields = line.split(None, 5)
                if len(fields) > 1 and fields[1][1:2] == b"w" and fields[1][3:4] == b"s":
                    found.append(fields[5].strip().decode("utf-8", "replace") if len(fields) > 5
                                 else "anonymous")
    except OSError:
        pass
    return ", ".join(found[:3])


_IPC = (("shm", "shmctl"), ("sem", "semctl"), ("msg", "msgctl"))


def _ipc_tables():
    """Every System V IPC object now: (table, id) -> its line (which moves with any use)."""
    found = {}  # type: dict
    for table, _call in _IPC:
        try:
            with open("/proc/sysvipc/" + table, "rb") as listing:
                lines = listing.read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) > 1:
                found[(table, int(fields[1]))] = line
    return found


def _remove_ipc(before):
    """Remove the System V IPC objects a test's process made; None, or why not all is back
    (an object that was there before and was used: its contents cannot be put back)."""
    now = _ipc_tables()
    if now == before:
        return None
    for (table, number), line in now.items():
        if (table, number) in before:
            if before[(table, number)] != line:
                return f"a test used a System V {table} object made before it"
            continue
        try:
            call = getattr(_libc(), dict(_IPC)[table])
            if (call(number, 0, 0, 0) if table == "sem" else call(number, 0, None)) != 0:
                return f"a test left a System V {table} object that cannot be removed"
        except (ImportError, OSError, AttributeError):
            return f"a test left a System V {table} object that cannot be removed"
    return None


def hold_signals():
    """Block every signal while this process waits for a fork (a handler of the code under test
    run meanwhile would be code of a test running here); the mask to give back."""
    return signal.pthread_sigmask(signal.SIG_BLOCK, set(signal.valid_signals()))


def drop_signals(mask):
    """Discard what was sent meanwhile (ignored, which drops a pending signal), then unblock."""
    for signum in signal.sigpending():
        try:
            handler = signal.getsignal(signum)
            signal.signal(signum, signal.SIG_IGN)
            signal.signal(signum, handler if handler is not None else signal.SIG_DFL)
        except (OSError, ValueError, TypeError):
            pass
    signal.pthread_sigmask(signal.SIG_SETMASK, mask)


_LIBC = []  # type: list


def _libc():
    if not _LIBC:
        import ctypes  # deferred: only a process that forks tests needs it

        _LIBC.append(ctypes.CDLL(None, use_errno=True))
    return _LIBC[0]


def _prctl(option, value):
    try:
        _libc().prctl(option, value, 0, 0, 0)
    except (ImportError, OSError, AttributeError):
        pass  # not Linux: forks still isolate memory; strays are not adopted


def _threads():
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return 1


def _children():
    """This process's children (its own and the orphans it adopted as subreaper)."""
    me = os.getpid()
    found = set()  # type: set[int]
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return found
    for tid in tasks:
        try:
            with open(f"/proc/self/task/{tid}/children", "rb") as listing:
                found.update(int(p) for p in listing.read().split())
        except (OSError, ValueError):
            return _children_by_scan(me)
    return found


def _children_by_scan(me):
    found = set()  # type: set[int]
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat", "rb") as source:
                    fields = source.read().rsplit(b")", 1)[1].split()
                if int(fields[1]) == me:
                    found.add(int(name))
            except (OSError, ValueError, IndexError):
                continue
    return found


def end_strays():
    """Kill every process a test left (adopted here as their subreaper) and reap them."""
    for _ in range(STRAY_ROUNDS):
        kids = _children()
        if not kids:
            break
        for pid in kids:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        for pid in kids:
            try:
                os.waitpid(pid, 0)
            except OSError:
                pass
    else:
        return "a test left processes that could not be ended"
    while True:  # a zombie adopted between the rounds
        try:
            pid, _status = os.waitpid(-1, os.WNOHANG)
        except OSError:
            break
        if pid == 0:
            break
    return None


def _identity(kind, st):
    """What a change of the name shows in: a file's contents (its ctime moves with any write,
    even one that sets its mtime back), a link's target; a folder's or a special file's
    inode (a folder's own contents are its names, compared one by one)."""
    if kind == stat.S_IFREG:
        return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    if kind == stat.S_IFLNK:
        return (st.st_ino, st.st_ctime_ns)
    return (st.st_ino,)


def _walk(root, into, kept):
    """Every name under ``root`` (links recorded, never followed) into ``into``, iteratively;
    with ``kept`` (the snapshot) the contents of regular files while ``kept[0]`` stays within
    :data:`SNAPSHOT_BYTES`. Every folder is made listable and writable (its mode as found is
    recorded, and put back), so that what a test left in a folder it locked can be seen and
    removed. False: too many names."""
    stack = [root]
    while stack:
        folder = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            try:
                os.chmod(folder, 0o700)
                entries = list(os.scandir(folder))
            except OSError:
                continue
        for entry in entries:
            if len(into) >= MAX_ENTRIES:
                return False
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            kind = stat.S_IFMT(st.st_mode)
            payload = None
            if kind == stat.S_IFDIR:
                stack.append(entry.path)
                if st.st_mode & 0o700 != 0o700:
                    try:
                        os.chmod(entry.path, st.st_mode | 0o700)
                    except OSError:
                        pass
            elif kind == stat.S_IFLNK:
                try:
                    payload = os.readlink(entry.path)
                except OSError:
                    pass
            elif kind == stat.S_IFREG and kept is not None and (
                    kept[0] + st.st_size <= SNAPSHOT_BYTES):
                payload = _read(entry.path)
                if payload is not None:
                    kept[0] += len(payload)
            into[entry.path] = (kind, stat.S_IMODE(st.st_mode), _identity(kind, st), payload)
    return True


def _read(path):
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        chunks = []  # type: list[bytes]
        while True:
            data = os.read(fd, 1 << 20)
            if not data:
                return b"".join(chunks)
            chunks.append(data)
    except OSError:
        return None
    finally:
        os.close(fd)


def _remove(path, kind):
    if kind == stat.S_IFDIR:
        os.rmdir(path)
    else:
        os.unlink(path)


def _restore(roots, shot):
    """Bring the roots back to ``shot``: what a test added goes (deepest first), what it
    changed or removed comes back (parents first); a put-back file's new identity is kept."""
    now = {}  # type: dict
    for root in roots:
        if not _walk(root, now, None):
            return f"a test left more than {MAX_ENTRIES} names in {root}"
    problems = []
    for path in sorted((p for p in now if p not in shot), reverse=True):
        try:
            _remove(path, now[path][0])
        except OSError as exc:
            problems.append(f"{path} ({exc.strerror})")
    for path in sorted(p for p in shot if p not in now or now[p][:3] != shot[p][:3]):
        kind, mode, _ident, payload = shot[path]
        was = now[path][0] if path in now else None
        try:
            if was is not None and was != kind:
                if was == stat.S_IFDIR:
                    _clear(path)
                _remove(path, was)
                was = None
            if kind == stat.S_IFDIR:
                if was is None:
                    os.mkdir(path, 0o700)
            elif kind == stat.S_IFLNK and payload is not None:
                if was is not None:
                    os.unlink(path)
                os.symlink(payload, path)
            elif kind == stat.S_IFREG and payload is not None:
                _write(path, payload, was is None)
            elif kind in (stat.S_IFREG, stat.S_IFLNK) or was is None:
                problems.append(f"{path} (cannot be made again)")
                continue
            if kind != stat.S_IFLNK:
                os.chmod(path, mode)
            st = os.lstat(path)
            shot[path] = (kind, mode, _identity(kind, st), payload)
        except OSError as exc:
            problems.append(f"{path} ({exc.strerror})")
    if problems:
        return "a test changed what cannot be put back: " + ", ".join(problems[:3])
    return None


def _write(path, payload, new):
    """A file's contents put back; in place when it is still there (a process that holds it
    open, this one included, sees the old contents again, not a test's under a new name)."""
    flags = os.O_WRONLY | os.O_NOFOLLOW | (os.O_CREAT | os.O_EXCL if new else os.O_TRUNC)
    if not new:
        os.chmod(path, 0o600)  # a test may have made it read-only; its mode is put back after
    fd = os.open(path, flags, 0o600)
    try:
        view = memoryview(payload)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)


def _clear(folder):
    """Everything under ``folder`` removed, deepest first, never following a link."""
    found = {}  # type: dict
    _walk(folder, found, None)
    for path in sorted(found, reverse=True):
        try:
            _remove(path, found[path][0])
        except OSError:
            pass
