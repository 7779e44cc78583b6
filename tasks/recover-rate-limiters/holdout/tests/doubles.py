"""Test doubles the package calls, declared to judged_tests as a child helper.

They run where the package under test runs (the judge sends this file to its child), so the
package can call them; the tests use their objects by reference. No expected value lives here.
"""


class Clock:
    """A clock the test moves by hand: ``clock.now += 5`` instead of sleeping."""

    def __init__(self):
        self.now = 50.0

    def __call__(self):
        return self.now
