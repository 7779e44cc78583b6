"""The catalogue's process-wide caches: parsed modules and folder listings.

Both are keyed by mtime (and size), bounded, guarded by one lock (the language server looks
graders up from worker threads), and cleared together by :func:`clear_cache`. An entry whose
mtime is under two seconds old is not kept (:func:`racy`).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict

from endstate_author.engine.catalogue.model import ParsedModule

lock = threading.Lock()
module_cache: OrderedDict[str, tuple[int, int, ParsedModule]] = OrderedDict()
listing_cache: OrderedDict[str, tuple[int, dict[str, bool]]] = OrderedDict()
CACHE_SIZE = 512


def racy(mtime_ns: int) -> bool:
    """An mtime within the last two seconds may not change on a second edit in the same clock
    tick, so an entry that fresh is not cached (git's "racy clean" rule)."""
    return time.time_ns() - mtime_ns < 2_000_000_000


def clear_cache() -> None:
    """Forget every parsed module (tests; the editor after a bulk change)."""
    with lock:
        module_cache.clear()
        listing_cache.clear()
