"""What the runner inside a Docker sandbox does to the container itself: shipped as source,
the first part of the runner's program (:mod:`endstate_harness.inside.box_runner` follows).
"""

import ctypes
import hashlib
import os
import signal
import time

_KEEPER = 1
"""The keeper is process 1 of the container (:mod:`endstate_harness.inside.keeper`): every
sweep spares it by that number, which no process of the container can take. What else a sweep
spares (this runner, its zygotes) the runner holds in its own memory; nothing is read from a
file, since every file a command can reach it can also write."""

_LIBC = []  # type: list[ctypes.CDLL]


def _nondumpable():
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(4, 0, 0, 0, 0) != 0:  # PR_SET_DUMPABLE, 0
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_DUMPABLE) failed")
    _LIBC.append(libc)


# --- the pool's reset: the container brought back to its state at creation, and shown ---

_WRITABLE = ("/tmp", "/dev/shm", "/dev/mqueue")
_IPC = (("shm", "shmctl"), ("sem", "semctl"), ("msg", "msgctl"))


def _digest():
    """What a reset must restore, as one digest: every name, type, mode, owner, size or device
    number and link target under /tmp and /dev, and the System V IPC tables."""
    h = hashlib.sha256()

    def walk(path):
        try:
            names = sorted(os.listdir(path))
        except OSError as exc:
            h.update(f"{path}: {exc.errno}\n".encode())
            return
        for name in names:
            full = os.path.join(path, name)
            try:
                st = os.lstat(full)
            except OSError as exc:
                h.update(f"{full}: {exc.errno}\n".encode())
                continue
            kind = st.st_mode & 0o170000
            size = st.st_rdev if kind in (0o020000, 0o060000) else st.st_size
            target = os.readlink(full) if kind == 0o120000 else ""
            h.update(f"{full} {st.st_mode:o} {st.st_nlink} {st.st_uid} {st.st_gid} {size} "
                     f"{target}\n".encode("utf-8", "surrogateescape"))
            if kind == 0o040000:
                walk(full)

    for top in ("/tmp", "/dev"):
        walk(top)
    for table, _ in _IPC:
        try:
            with open("/proc/sysvipc/" + table, "rb") as f:
                h.update(f.read())
        except OSError as exc:
            h.update(f"ipc {table}: {exc.errno}\n".encode())
    return h.hexdigest()


def _empty(top):
    """Delete everything under ``top`` (never following a link), making folders writable
    first; the folder itself stays."""
    def clear(path):
        try:
            entries = list(os.scandir(path))
        except OSError:
            return
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    os.chmod(entry.path, 0o700)
                    clear(entry.path)
                    os.rmdir(entry.path)
                else:
                    os.unlink(entry.path)
            except OSError:
                pass
    clear(top)


def _reset(own):
    """End everything but the keeper and the runner's own (:func:`_end_others`), empty the
    writable places, remove IPC objects; then the digest (None: something would not go)."""
    if not _end_others(own):
        return None
    for top in _WRITABLE:
        _empty(top)
    libc = _LIBC[0]
    for table, call in _IPC:
        try:
            with open("/proc/sysvipc/" + table) as f:
                rows = [line.split() for line in f.read().splitlines()[1:]]
        except OSError:
            continue
        for row in rows:
            if len(row) > 1 and row[1].isdigit():
                if table == "sem":
                    getattr(libc, call)(int(row[1]), 0, 0, 0)  # IPC_RMID
                else:
                    getattr(libc, call)(int(row[1]), 0, None)  # IPC_RMID
    return _digest()


def _alive_others(spared):
    """The processes of the container that are not spared and can still run (a zombie ran
    its last instruction; the keeper reaps it)."""
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) in spared:
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                state = f.read().rpartition(b")")[2].split()[:1]
        except OSError:
            continue  # gone
        if state and state[0] not in (b"Z", b"X"):
            out.append(int(name))
    return out


_END_S = 2.0
"""How long ending everything may take before it is reported as failed."""


def _end_others(own):
    """Kill every process of the container but the keeper and ``own`` (the runner's pids, from
    its memory), and look again until a look finds none that can run: one that was forking
    while the last look went by is caught by the next (a process with SIGKILL pending forks no
    more). True once none is left; False when some still run after :data:`_END_S` (the host
    then freezes the container before it acts on the tree)."""
    spared = {_KEEPER, *own}
    pause, deadline = 0.0005, time.monotonic() + _END_S
    while True:
        left = _alive_others(spared)
        if not left:
            return True
        if time.monotonic() >= deadline:
            return False
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(pause)  # SIGKILL lands within a few milliseconds: look soon, then less often
        pause = min(pause * 2, 0.02)


def _kill_group(pid):
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass
