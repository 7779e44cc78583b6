"""A real process standing in for a prove that has not said anything yet: it prints nothing
and sleeps until it is stopped, so what the server shows meanwhile is what it knew at the
save (the cache, looked up under the one sandbox choice)."""

from __future__ import annotations

import time

time.sleep(120)
