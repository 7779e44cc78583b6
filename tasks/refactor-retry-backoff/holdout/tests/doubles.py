"""Test doubles retry() calls, declared to judged_tests as a child helper.

They run where the package under test runs (the judge sends this file to its child), so
retry() can call them; the tests use their objects by reference. No expected value lives here.
"""


class Flaky:
    """A call that fails ``failures`` times with ``OSError``, then returns ``"ok"``."""

    def __init__(self, failures):
        self.failures = failures
        self.calls = 0

    def __call__(self):
        self.calls += 1
        if self.calls <= self.failures:
            raise OSError("connection reset")
        return "ok"


class Broken:
    """A call that fails with an error retry() must not retry."""

    def __init__(self):
        self.calls = 0

    def __call__(self):
        self.calls += 1
        raise KeyError("not a network error")


class Sleeps:
    """Records what retry() sleeps instead of sleeping."""

    def __init__(self):
        self.delays = []

    def __call__(self, seconds):
        self.delays.append(seconds)
