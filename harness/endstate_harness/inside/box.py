"""What the runner inside a Docker sandbox does to the container itself: shipped as source,
the first part of the runner's program (:mod:`endstate_harness.inside.box_runner` follows).
"""

import ctypes
import hashlib
import os
import signal
import time

_KEEPER_FILE = "/tmp/.endstate-keeper"
"""Where the keeper (the process holding the container open) wrote its pid."""

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


def _reset(keeper, own):
    """Kill everything but init, the keeper and the runner's own until nothing else is left
    (zombies are reaped by init), empty the writable places, restore the keeper file, remove
    IPC objects; then the digest (None: something would not go)."""
    spared = {1, keeper, *own}
    for _ in range(2000):
        left = _others(spared)
        if not left:
            break
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.0005)
    else:
        return None
    for top in _WRITABLE:
        _empty(top)
    with open(_KEEPER_FILE, "w") as f:
        f.write(f"{keeper}\n")
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


def _spared(own):
    """Init, the keeper (when its file can be read, as the shell wrapper reads it; else
    None: then nothing is swept, as the wrapper sweeps nothing) and ``own`` (the runner's
    pids)."""
    try:
        with open(_KEEPER_FILE) as f:
            keeper = int(f.readline().strip())
    except (OSError, ValueError):
        return None
    return {1, keeper, *own}


def _others(spared):
    out = []
    for name in os.listdir("/proc"):
        if name.isdigit() and int(name) not in spared:
            out.append(int(name))
    return out


def _sweep_and_settle(own):
    """Kill every process but the spared ones, then wait (up to ~1 s) until none is left
    alive (zombies excepted): the wrapper's sweep and settle."""
    spared = _spared(own)
    if spared is None:
        return
    for pid in _others(spared):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    pause, waited = 0.0005, 0.0
    while waited < 1.0:
        alive = False
        for pid in _others(spared):
            try:
                with open(f"/proc/{pid}/stat", "rb") as f:
                    state = f.read().rpartition(b")")[2].split()[:1]
            except OSError:
                continue
            if state and state[0] not in (b"Z", b"X"):
                alive = True
                break
        if not alive:
            return
        time.sleep(pause)  # SIGKILL lands within a few milliseconds: look soon, then less often
        waited += pause
        pause = min(pause * 2, 0.02)


def _kill_group(pid):
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass
