import json
import unittest
from pathlib import Path

from retrying import policy
from tests.doubles import Broken, Flaky, Sleeps

CASES = json.loads(Path(__file__).with_name("retry_cases.json").read_text(encoding="utf-8"))


class HeldOutRetryTest(unittest.TestCase):
    def test_cases(self):
        for case in CASES:
            with self.subTest(case=case):
                call, sleeps = Flaky(case["failures"]), Sleeps()
                if case["result"] is None:
                    with self.assertRaises(policy.RetryError):
                        policy.retry(call, sleep=sleeps, **case["kwargs"])
                else:
                    result = policy.retry(call, sleep=sleeps, **case["kwargs"])
                    self.assertEqual(json.dumps(result), json.dumps(case["result"]))
                self.assertEqual(json.dumps(call.calls), json.dumps(case["calls"]))
                self.assertEqual(json.dumps(sleeps.delays), json.dumps(case["slept"]))

    def test_other_errors_are_not_retried(self):
        call, sleeps = Broken(), Sleeps()
        with self.assertRaises(KeyError):
            policy.retry(call, sleep=sleeps)
        self.assertEqual(json.dumps([call.calls, sleeps.delays]), json.dumps([1, []]))

    def test_rejects_zero_attempts(self):
        with self.assertRaises(ValueError):
            policy.retry(Flaky(0), attempts=0, sleep=Sleeps())


if __name__ == "__main__":
    unittest.main()
