"""Processes the harness starts and must clean up after: groups, reaper, watchdog, zygotes."""
