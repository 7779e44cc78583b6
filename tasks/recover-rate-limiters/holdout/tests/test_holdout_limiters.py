import json
import unittest
from pathlib import Path

from ratelimit.bucket import TokenBucket
from ratelimit.window import SlidingWindow
from tests.doubles import Clock

SCRIPT = json.loads(Path(__file__).with_name("limiter_script.json").read_text(encoding="utf-8"))


def _play(limiter, clock, steps):
    """Advance the clock, try N requests, and return how many were admitted per step."""
    admitted = []
    for advance, tries, _ in steps:
        clock.now += advance
        results = [limiter.try_acquire() for _ in range(tries)]
        for result in results:
            if type(result) is not bool:
                raise AssertionError(f"try_acquire returned {result!r}, not a bool")
        admitted.append(sum(results))
    return admitted


class HeldOutLimiterTest(unittest.TestCase):
    def test_bucket_script(self):
        spec = SCRIPT["bucket"]
        clock = Clock()
        bucket = TokenBucket(rate=spec["rate"], capacity=spec["capacity"], clock=clock)
        got = _play(bucket, clock, spec["steps"])
        self.assertEqual(json.dumps(got), json.dumps([s[2] for s in spec["steps"]]))
        clock.now += 1000.0
        available = bucket.available()
        self.assertIs(type(available), float)
        self.assertEqual(json.dumps(available), json.dumps(spec["available_after_idle"]))

    def test_window_script(self):
        spec = SCRIPT["window"]
        clock = Clock()
        limiter = SlidingWindow(limit=spec["limit"], window=spec["window"], clock=clock)
        got = _play(limiter, clock, spec["steps"])
        self.assertEqual(json.dumps(got), json.dumps([s[2] for s in spec["steps"]]))
        counted = limiter.in_window()
        self.assertIs(type(counted), int)
        self.assertEqual(json.dumps(counted), json.dumps(spec["counted_at_end"]))


if __name__ == "__main__":
    unittest.main()
