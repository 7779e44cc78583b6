import json
import unittest
from pathlib import Path

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



if __name__ == "__main__":
    unittest.main()
