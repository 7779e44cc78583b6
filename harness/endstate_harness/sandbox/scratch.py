"""Where short-lived grading trees go: memory (``/dev/shm``) when the machine has it. An
explicit ``TMPDIR`` is always honoured, and so is ``ENDSTATE_SCRATCH`` (a folder, or
``disk``).
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
