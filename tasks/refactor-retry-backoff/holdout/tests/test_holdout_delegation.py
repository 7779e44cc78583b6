"""Delegation: the one check that needs a monkeypatch, so it runs in process (tests_pass).

judged_tests grades the behaviour; patching the package cannot cross its boundary.
"""

import json
import unittest
from pathlib import Path
from unittest import mock

from retrying import backoff, policy

CASES = json.loads(Path(__file__).with_name("backoff_cases.json").read_text(encoding="utf-8"))



class HeldOutBackoffDelegationTest(unittest.TestCase):
    def test_retry_sleeps_the_schedule(self):
        schedule = [7.0, 11.0, 13.0]
        slept = []
        with mock.patch.object(policy, "backoff_delays", return_value=schedule) as delays:

            def always_fails():
                raise OSError("down")

            with self.assertRaises(policy.RetryError):
                policy.retry(always_fails, attempts=4, base=1.0, factor=2.0, cap=9.0,
                             sleep=slept.append)
        delays.assert_called_once_with(4, 1.0, 2.0, 9.0)
        self.assertEqual(json.dumps(slept), json.dumps(schedule))


if __name__ == "__main__":
    unittest.main()
