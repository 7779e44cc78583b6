"""Where short-lived grading trees go: memory (``/dev/shm``) when the machine has it.

Why: a full prove makes, copies and removes a few hundred small trees (a sandbox per check,
the live tree rewritten before every run, a private HOME per command). On a disk file system
each ``mkdir``/``rmdir``/``unlink`` is a journal entry, and under load they were the largest
remaining part of a check (measured on ``tasks/fix-help-text-wrap``: 2.45 s → 1.97 s for a
full prove with TMPDIR=/dev/shm, system time halved; in one run under other load). A tmpfs
does the same in memory.

Only for grading trees, whose size is the task's fixture: an agent's sandbox (``eval``) keeps
the system temp folder, where a runaway write fills a disk rather than memory. An explicit
``TMPDIR`` is always honoured (the user chose where temp files go), and so is
``ENDSTATE_SCRATCH`` (a folder, or ``disk`` for the system temp folder).
"""

from __future__ import annotations

import os
from pathlib import Path

SCRATCH_PREFIX = "endstate-sandbox-"
"""How every sandbox's scratch folder's name starts (so a stray one can be recognised)."""
SCRATCH_ENV = "ENDSTATE_SCRATCH"
MEMORY_DIR = Path("/dev/shm")
MIN_FREE_BYTES = 1 << 30
"""A tmpfs with less room than this (a container's 64 MiB /dev/shm) is not used."""


def grading_scratch_root() -> Path | None:
    """The folder to make grading trees in, or None for the system temp folder."""
    chosen = os.environ.get(SCRATCH_ENV, "").strip()
    if chosen:
        return None if chosen == "disk" else Path(chosen)
    if os.environ.get("TMPDIR"):
        return None
    try:
        if not (MEMORY_DIR.is_dir() and os.access(MEMORY_DIR, os.W_OK | os.X_OK)):
            return None
        stats = os.statvfs(MEMORY_DIR)
    except OSError:
        return None
    return MEMORY_DIR if stats.f_bavail * stats.f_frsize >= MIN_FREE_BYTES else None
