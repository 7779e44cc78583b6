import json
import unittest
from pathlib import Path
from unittest import mock

from retrying import backoff, policy

CASES = json.loads(Path(__file__).with_name("backoff_cases.json").read_text(encoding="utf-8"))


class HeldOutBackoffTest(unittest.TestCase):
    def test_cases(self):
        for case in CASES:
            with self.subTest(case["args"]):
                delays = backoff.backoff_delays(*case["args"])
                self.assertIs(type(delays), list)
                for delay in delays:
                    self.assertIs(type(delay), float)
                self.assertEqual(json.dumps(delays), json.dumps(case["delays"]))

    def test_rejects_zero_attempts(self):
        with self.assertRaises(ValueError):
            backoff.backoff_delays(0, 1.0, 2.0, 10.0)

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
